// Block drivers shared by the fused kernels of the AVX2 and AVX3_DL targets
// (dequant/avx2_fused-inl.h, dequant/avx3dl_lookup-inl.h), included by
// dequant/simd_kernels.cc inside its per-target namespace (issue 18).

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3_DL

// Whole parameter blocks of k codes (a multiple of S): block b's parameter
// is param(b), and step(i, that parameter) writes outputs i .. i + S - 1.
// The common block sizes get compile-time trip counts (straight-line
// blocks).
template <size_t S, size_t K, class Param, class Step>
HWY_INLINE void BlockLoop(size_t k, size_t blocks, const Param& param,
                          const Step& step) {
  const size_t kk = K != 0 ? K : k;
  for (size_t b = 0; b < blocks; ++b) {
    const auto v = param(b);
    for (size_t j = 0; j < kk; j += S) step(b * kk + j, v);
  }
}

template <size_t S, class Param, class Step>
HWY_INLINE void WholeBlocks(size_t k, size_t blocks, const Param& param,
                            const Step& step) {
  switch (k) {
    case 32:
      if constexpr (S <= 32) return BlockLoop<S, 32>(k, blocks, param, step);
      break;
    case 64:
      return BlockLoop<S, 64>(k, blocks, param, step);
    case 128:
      return BlockLoop<S, 128>(k, blocks, param, step);
    default:
      break;
  }
  return BlockLoop<S, 0>(k, blocks, param, step);
}

// True when the cursor is at a block start and n covers whole blocks of a
// multiple of S codes.
template <size_t S>
HWY_INLINE bool AtWholeBlocks(const ParamCursor& pc, size_t n) {
  return pc.left == pc.period && pc.period % S == 0 && n >= pc.period;
}

// Runs body(stream, out, first, count, cursor) over the run, where `stream`
// is std::true_type when the body's whole-vector stores on a line are to be
// non-temporal. Streamed runs whose blocks start on lines store straight from
// the registers; the others go tile by tile through an L1 stage that
// StreamCopy writes out. From DRAM into outputs on lines, the registers
// beat the stage in 16 of 18 rounds (3 rows on AVX3_DL and on AVX2), by up
// to 1.6 x (bench/RESULTS.md, issue 18).
template <class Body>
void FusedRun(const Run& r, const Body& body) {
  ParamCursor pc(r);
  if (!r.stream) return body(std::false_type(), r.out, r.first, r.count, pc);
  if (BlocksOnLines(r.out, r.count, pc)) {
    detail::streamed_outputs.from_registers += r.count;
    return body(std::true_type(), r.out, r.first, r.count, pc);
  }
  HWY_ALIGN float stage[kTile];
  for (size_t done = 0; done < r.count;) {
    const size_t len = std::min(kTile, r.count - done);
    body(std::false_type(), stage, r.first + done, len, pc);
    StreamCopy(stage, r.out + done, len);
    done += len;
  }
}

#endif  // HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3_DL
