// Descriptor-level rules of the layout-specific fields (memory-layout.md,
// layouts/*.md): one function per layout family, dispatched on layout_tag.
#ifndef HURRAY_PARSER_LAYOUT_RULES_H_
#define HURRAY_PARSER_LAYOUT_RULES_H_

#include "parser/descriptor.h"
#include "parser/options.h"
#include "parser/rules.h"

namespace hurray {

// True when this library validates every descriptor-level rule of the
// layout. Strict mode rejects the others with LAY-TAG-03 (a layout the
// reader does not implement); permissive mode decodes them structurally.
bool LayoutRulesImplemented(uint8_t layout_tag);

Rejection CheckLayout(const TensorDescriptor& d, const ParseOptions& options);

}  // namespace hurray

#endif  // HURRAY_PARSER_LAYOUT_RULES_H_
