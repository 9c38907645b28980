#include "parser/layout_rules.h"

namespace hurray {

bool LayoutRulesImplemented(uint8_t tag) {
  return tag == layout_tag::kRowMajor || tag == layout_tag::kColumnMajor ||
         layout_tag::IsExtension(tag);
}

Rejection CheckLayout(const TensorDescriptor& d, const ParseOptions& o) {
  const uint8_t tag = d.layout_tag;
  if (!LayoutRulesImplemented(tag) && Applies(Rule::kLayTag03, o.mode)) {
    return {Rule::kLayTag03, 15, "this reader does not validate the layout"};
  }
  if (layout_tag::IsExtension(tag) &&
      !o.agreed.HasLayoutId(d.layout.extension_layout_id) &&
      Applies(Rule::kLayTag04, o.mode)) {
    return {Rule::kLayTag04, d.offsets.layout,
            "extension_layout_id is not recognised"};
  }
  return kAccepted;
}

}  // namespace hurray
