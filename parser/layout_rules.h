// Descriptor-level rules of the layout-specific fields (memory-layout.md,
// layouts/*.md), in two phases: the fields themselves (before the buffer
// table is checked) and the buffer sizes and quantization compositions they
// imply (after the quantization section is checked).
#ifndef HURRAY_PARSER_LAYOUT_RULES_H_
#define HURRAY_PARSER_LAYOUT_RULES_H_

#include "parser/descriptor.h"
#include "parser/options.h"
#include "parser/rules.h"

namespace hurray {

// True when this library validates every descriptor-level rule of the
// layout. Strict mode rejects any other layout with LAY-TAG-03; today every
// assigned layout and the extension range are implemented, so LAY-TAG-03
// fires for a future assigned tag, or for a layout a reader is configured
// without (ParseOptions::disabled_layouts).
bool LayoutRulesImplemented(uint8_t layout_tag);

// Layout fields, layout-specific rank rules, buffer counts and the flags a
// layout forbids (LAY-STR/TIL/MOR/HIL/COO/CSR/CSC/CSF/BPG/CMP, LAY-TAG-03/04).
Rejection CheckLayoutFields(const TensorDescriptor& d,
                            const ParseOptions& options);

// Buffer sizes implied by shape, type and layout (BUF-SZ-02…10, 12) and the
// block-paged quantization compositions (LAY-BPG-09…14).
Rejection CheckLayoutSizes(const TensorDescriptor& d,
                           const ParseOptions& options);

}  // namespace hurray

#endif  // HURRAY_PARSER_LAYOUT_RULES_H_
