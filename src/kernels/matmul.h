// Matrix product of f32 activation rows with a weight matrix stored in its ggml type:
// y[r][o] = scale * sum_i x[r][i] * W[o][i]. Every linear layer of every model runs through here,
// for decode (n = 1), speculative verification (n = 1 + k) and prefill (n up to the batch).
//
// Paths (chosen by kernels::active_isa(), never by the compiler's target):
//  - ref: dequantizes each weight row (tensor/quants) and accumulates in double. The oracle.
//  - avx2 / avx512: quantized weights are multiplied against the activations quantized ONCE per
//    call to int8 blocks of 32 with per-block scale and per-16 sums (quant_act.h), using int8
//    dot products (AVX-512 VNNI vpdpbusd; AVX2 maddubs). F32/F16/BF16 weights use f32 FMA on the
//    unquantized activations. Several activation rows share each unpacked weight chunk.
//  The int8 paths lose accuracy to the activation rounding (relative error of a dot product about
//  0.5 % of |x|·|w|, rigorously below 2.3 %; see tests/matmul for the derivation).
//
// Threads: the output rows are split across the pool (or the activation rows when there are too
// few output rows); the calling thread quantizes the activations before the single run, so a
// call costs one barrier. Results do not depend on the thread count.
//
// Scratch: the quantized activations live in a buffer owned by the calling thread and each pool
// thread has a small per-thread buffer; both grow to the largest shape seen and are never freed,
// so steady-state calls allocate nothing.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/thread_pool.h"
#include "tensor/dtype.h"

namespace fulgur::kernels {

// How a weight matrix's bytes are arranged.
//  kRows:   row-major, each row in its ggml type (the file's own layout).
//  kRows16: repacked at load (kernels/packed.h): tiles of 16 consecutive rows whose blocks are
//           interleaved so one zmm register (or two ymm) holds the same 4 columns of all 16
//           rows; rows are zero-padded to a multiple of 16. The AVX-512 and AVX2 tile kernels
//           read it (kernels/packed.h), never the reference.
enum class WeightLayout : uint8_t { kRows, kRows16 };

// A weight matrix [rows][cols] in its ggml type.
struct WeightView {
  DType type = DType::kF32;
  const void* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;       // a multiple of the type's block size
  size_t row_stride = 0;  // kRows: bytes between rows, >= row_bytes(type, cols);
                          // kRows16: bytes between 16-row tiles
  float scale = 1.0f;     // NVFP4 per-tensor `.scale` sidecar (multiplies the output); 1 otherwise
  WeightLayout layout = WeightLayout::kRows;
};

// Whether matmul accepts `type` as a weight (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K,
// Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M,
// TQ1_0, TQ2_0, MXFP4, NVFP4).
bool matmul_supports(DType type);

// y[r][o] = w.scale * sum_i x[r][i] * W[o][i]   for r < n, o < w.rows.
// x: [n][ldx] f32 (ldx >= cols), y: [n][ldy] f32 (ldy >= rows); y must not overlap x.
// pool may be null (single-threaded). Throws fulgur::Error for an unsupported type or a bad shape.
void matmul(const WeightView& w, const float* x, int64_t n, int64_t ldx, float* y, int64_t ldy,
            ThreadPool* pool);

// Several matrices applied to the same activation rows as ONE op (Q, K and V; gate and up): the
// activations are quantized once and the pool runs once, each thread taking a contiguous share
// of all the matrices' output rows. Bit for bit the same results as separate matmul calls.
// Every matrix must have the same cols.
struct MatmulOut {
  const WeightView* w;
  float* y;      // [n][ldy], ldy >= w->rows
  int64_t ldy;
};
inline constexpr int kMaxMatmulOuts = 4;
void matmul_many(const MatmulOut* outs, int n_outs, const float* x, int64_t n, int64_t ldx,
                 ThreadPool* pool);

// ---- grouped matmul: the experts of a mixture-of-experts layer --------------------------------
// One job of matmul_grouped: a weight matrix (an expert's slice, moe.h expert_matrix) applied to
// its own list of activation rows,
//   y[i][o] = w.scale * sum_c x_i[c] * W[o][c]   for i < n, o < w->rows,
// where x_i is
//  - row rows[i] of the call's shared activations when rows is set (gathered: an expert's gate
//    and up projections over the batch rows routed to it), or
//  - row i of the job's own x when rows is null (an expert's down projection over its own
//    intermediate rows).
struct MatmulJob {
  const WeightView* w = nullptr;
  int64_t n = 0;                  // activation rows; 0: nothing runs and w is never read
  const int32_t* rows = nullptr;  // [n] rows of the shared x, each in [0, n_x); or null
  const float* x = nullptr;       // [n][ldx] the job's own activations (when rows is null)
  int64_t ldx = 0;
  float* y = nullptr;             // [n][ldy], ldy >= w->rows
  int64_t ldy = 0;
};

// Runs the jobs as ONE op: every distinct activation row is quantized once (each of the n_x
// shared rows however many jobs gather it, and each row of a job's own x), the pool runs once
// (one barrier however many experts are active), and the threads split the weight bytes of all
// jobs, each job's bytes weighted by the rows it multiplies (a thread copies the quantized rows
// of its share of a gathered job next to each other first). Bit for bit, each job's y is what
// matmul(*w, <its rows gathered into one buffer>, n, ...) gives: an output row depends neither
// on the other rows nor on the other jobs (speculative verification on MoE targets relies on
// it). All jobs share one activation format, so they must have the same cols; every type and
// both layouts of matmul work, the ref ISA runs matmul_ref per job.
// x: [n_x][ldx] f32 shared activations (null with n_x = 0 when no job gathers; pass only rows
// that some job gathers, as all n_x are quantized). The y buffers must not overlap each other
// or any activations. Throws fulgur::Error naming the job for a bad job (a row index out of
// range, mismatched cols, bad shapes as matmul). Steady-state calls allocate nothing.
void matmul_grouped(const MatmulJob* jobs, int n_jobs, const float* x, int64_t n_x, int64_t ldx,
                    ThreadPool* pool);

// The scalar reference (always available; what the tests compare against).
void matmul_ref(const WeightView& w, const float* x, int64_t n, int64_t ldx, float* y,
                int64_t ldy, ThreadPool* pool);

}  // namespace fulgur::kernels
