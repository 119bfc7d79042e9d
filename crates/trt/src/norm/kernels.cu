// Normalization kernels for dimguard-trt, compiled at run time by NVRTC, once per storage type:
// -DDG_DTYPE=0 (fp32), 1 (fp16), 2 (bf16). Statistics are accumulated in fp32; the variance is
// the biased one, as TensorRT's INormalizationLayer and PyTorch compute it. No headers are
// needed: fp16 and bf16 are converted with PTX instructions / bit operations.

typedef long long i64;

#if DG_DTYPE == 0
typedef float T;
__device__ __forceinline__ float ld(const T* p, i64 i) { return p[i]; }
__device__ __forceinline__ void st(T* p, i64 i, float v) { p[i] = v; }
#elif DG_DTYPE == 1
typedef unsigned short T;
__device__ __forceinline__ float ld(const T* p, i64 i) {
    float f; unsigned short h = p[i];
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
__device__ __forceinline__ void st(T* p, i64 i, float v) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    p[i] = h;
}
#else
typedef unsigned short T;
__device__ __forceinline__ float ld(const T* p, i64 i) {
    return __uint_as_float(((unsigned int)p[i]) << 16);
}
__device__ __forceinline__ void st(T* p, i64 i, float v) {
    unsigned int u = __float_as_uint(v);
    if ((u & 0x7fffffff) > 0x7f800000) { p[i] = (unsigned short)((u >> 16) | 0x40); return; }
    u += 0x7fff + ((u >> 16) & 1);  // round to nearest even
    p[i] = (unsigned short)(u >> 16);
}
#endif

// BatchNorm inference: y = x * scale[c] + shift[c], c = (i / inner) % C (scale and shift
// folded on the host from weight, bias, running mean/var and eps).
extern "C" __global__ void bn_infer(const T* __restrict__ x, T* __restrict__ y,
                                    const float* __restrict__ scale, const float* __restrict__ shift,
                                    i64 n, i64 inner, int channels) {
    if (n < 0x7fffffff) {
        // 32-bit index arithmetic: 64-bit division is emulated and costs tens of instructions.
        unsigned un = (unsigned)n, uin = (unsigned)inner, uc = (unsigned)channels;
        for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < un; i += gridDim.x * blockDim.x) {
            unsigned c = (i / uin) % uc;
            st(y, i, ld(x, i) * scale[c] + shift[c]);
        }
        return;
    }
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x) {
        int c = (int)((i / inner) % channels);
        st(y, i, ld(x, i) * scale[c] + shift[c]);
    }
}

// Welford combination.
__device__ __forceinline__ void combine(float& n, float& mean, float& m2, float nb, float mb, float m2b) {
    if (nb == 0.f) return;
    float nn = n + nb;
    float d = mb - mean;
    mean += d * (nb / nn);
    m2 += m2b + d * d * (n * nb / nn);
    n = nn;
}

// Block-wide Welford reduction; thread 0 holds the result.
__device__ void block_welford(float& n, float& mean, float& m2) {
    __shared__ float sn[32], smean[32], sm2[32];
    for (int o = 16; o > 0; o >>= 1) {
        float n2 = __shfl_down_sync(0xffffffff, n, o);
        float mean2 = __shfl_down_sync(0xffffffff, mean, o);
        float m22 = __shfl_down_sync(0xffffffff, m2, o);
        combine(n, mean, m2, n2, mean2, m22);
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) { sn[warp] = n; smean[warp] = mean; sm2[warp] = m2; }
    __syncthreads();
    if (warp == 0) {
        int nw = (blockDim.x + 31) >> 5;
        n = lane < nw ? sn[lane] : 0.f; mean = lane < nw ? smean[lane] : 0.f; m2 = lane < nw ? sm2[lane] : 0.f;
        for (int o = 16; o > 0; o >>= 1) {
            float n2 = __shfl_down_sync(0xffffffff, n, o);
            float mean2 = __shfl_down_sync(0xffffffff, mean, o);
            float m22 = __shfl_down_sync(0xffffffff, m2, o);
            combine(n, mean, m2, n2, mean2, m22);
        }
    }
}

// Per-parameter index of element p of group g: (g % A) * B + p / S.
__device__ __forceinline__ i64 pidx(i64 g, i64 p, i64 A, i64 B, i64 S) { return (g % A) * B + p / S; }

// Sum of `v` over the block, returned to every thread: warp shuffles, then thread 0 adds the
// warps' sums in order. `red` is 32 floats of the caller's shared memory; the leading barrier lets
// a kernel call this twice with the same `red`.
__device__ __forceinline__ float block_sum(float v, float* red) {
    __shared__ float total;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    __syncthreads();
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        float s = 0.f;
        for (int i = 0; i < (blockDim.x + 31) / 32; i++) s += red[i];
        total = s;
    }
    __syncthreads();
    return total;
}

// Small groups (group_size <= 256 * VPT): one block per group, values kept in registers, exact
// two-pass statistics, one read and one write of the tensor.
#define VPT 16

extern "C" __global__ void norm_fused(const T* __restrict__ x, T* __restrict__ y,
                                      const float* __restrict__ w, const float* __restrict__ b,
                                      i64 group_size, i64 A, i64 B, i64 S, float eps, int affine) {
    i64 g = blockIdx.x;
    const T* xg = x + g * group_size;
    T* yg = y + g * group_size;
    float v[VPT];
    float sum = 0.f;
#pragma unroll
    for (int k = 0; k < VPT; k++) {
        i64 p = (i64)k * blockDim.x + threadIdx.x;
        v[k] = p < group_size ? ld(xg, p) : 0.f;
        sum += v[k];
    }
    __shared__ float red[32];
    float mean = block_sum(sum, red) / (float)group_size;
    float sq = 0.f;
#pragma unroll
    for (int k = 0; k < VPT; k++) {
        i64 p = (i64)k * blockDim.x + threadIdx.x;
        float d = p < group_size ? v[k] - mean : 0.f;
        sq += d * d;
    }
    float rstd = rsqrtf(block_sum(sq, red) / (float)group_size + eps);
#pragma unroll
    for (int k = 0; k < VPT; k++) {
        i64 p = (i64)k * blockDim.x + threadIdx.x;
        if (p < group_size) {
            float o = (v[k] - mean) * rstd;
            if (affine) { i64 q = pidx(g, p, A, B, S); o = o * w[q] + b[q]; }
            st(yg, p, o);
        }
    }
}

// Large groups, pass 1: Welford partials, one block per (group, chunk).
extern "C" __global__ void norm_partial(const T* __restrict__ x, float* __restrict__ part,
                                        i64 group_size, i64 chunk, int chunks) {
    i64 g = blockIdx.x / chunks;
    i64 c = blockIdx.x % chunks;
    i64 lo = c * chunk, hi = lo + chunk < group_size ? lo + chunk : group_size;
    const T* xg = x + g * group_size;
    float n = 0.f, mean = 0.f, m2 = 0.f;
    for (i64 p = lo + threadIdx.x; p < hi; p += blockDim.x) {
        float v = ld(xg, p);
        n += 1.f;
        float d = v - mean;
        mean += d / n;
        m2 += d * (v - mean);
    }
    block_welford(n, mean, m2);
    if (threadIdx.x == 0) {
        part[3 * blockIdx.x] = n; part[3 * blockIdx.x + 1] = mean; part[3 * blockIdx.x + 2] = m2;
    }
}

// Pass 2: combine a group's partials into mean and 1/std.
extern "C" __global__ void norm_finalize(const float* __restrict__ part, float* __restrict__ stats,
                                         i64 groups, int chunks, float eps) {
    i64 g = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= groups) return;
    float n = 0.f, mean = 0.f, m2 = 0.f;
    for (int c = 0; c < chunks; c++) {
        const float* p = part + 3 * (g * chunks + c);
        combine(n, mean, m2, p[0], p[1], p[2]);
    }
    stats[2 * g] = mean;
    stats[2 * g + 1] = rsqrtf(m2 / n + eps);
}

// Pass 3: normalize.
extern "C" __global__ void norm_apply(const T* __restrict__ x, T* __restrict__ y,
                                      const float* __restrict__ stats,
                                      const float* __restrict__ w, const float* __restrict__ b,
                                      i64 n, i64 group_size, i64 A, i64 B, i64 S, int affine) {
    if (n < 0x7fffffff) {
        unsigned un = (unsigned)n, ugs = (unsigned)group_size, uA = (unsigned)A, uB = (unsigned)B, uS = (unsigned)S;
        for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < un; i += gridDim.x * blockDim.x) {
            unsigned g = i / ugs, p = i - g * ugs;
            float o = (ld(x, i) - stats[2 * g]) * stats[2 * g + 1];
            if (affine) { unsigned q = (g % uA) * uB + p / uS; o = o * w[q] + b[q]; }
            st(y, i, o);
        }
        return;
    }
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x) {
        i64 g = i / group_size, p = i - g * group_size;
        float o = (ld(x, i) - stats[2 * g]) * stats[2 * g + 1];
        if (affine) { i64 q = pidx(g, p, A, B, S); o = o * w[q] + b[q]; }
        st(y, i, o);
    }
}

// ---- Vectorized variants: 16-byte loads and stores (4 fp32 or 8 fp16/bf16 values). The host
// uses them when every vector lies in one group and one parameter slot (sizes multiples of VEC)
// and the tensor has fewer than 2^31 elements (32-bit index arithmetic).

#if DG_DTYPE == 0
#define VEC 4
__device__ __forceinline__ void ldv(const T* p, unsigned i, float* f) {
    float4 v = *(const float4*)(p + i);
    f[0] = v.x; f[1] = v.y; f[2] = v.z; f[3] = v.w;
}
__device__ __forceinline__ void stv(T* p, unsigned i, const float* f) {
    *(float4*)(p + i) = make_float4(f[0], f[1], f[2], f[3]);
}
#else
#define VEC 8
__device__ __forceinline__ float cvt_in(unsigned short h) { T t = h; return ld(&t, 0); }
__device__ __forceinline__ unsigned short cvt_out(float v) { T t; st(&t, 0, v); return t; }
__device__ __forceinline__ void ldv(const T* p, unsigned i, float* f) {
    uint4 v = *(const uint4*)(p + i);
    unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int k = 0; k < 4; k++) { f[2 * k] = cvt_in(w[k] & 0xffff); f[2 * k + 1] = cvt_in(w[k] >> 16); }
}
__device__ __forceinline__ void stv(T* p, unsigned i, const float* f) {
    unsigned w[4];
#pragma unroll
    for (int k = 0; k < 4; k++) w[k] = (unsigned)cvt_out(f[2 * k]) | ((unsigned)cvt_out(f[2 * k + 1]) << 16);
    *(uint4*)(p + i) = make_uint4(w[0], w[1], w[2], w[3]);
}
#endif

extern "C" __global__ void bn_infer_v(const T* __restrict__ x, T* __restrict__ y,
                                      const float* __restrict__ scale, const float* __restrict__ shift,
                                      unsigned n, unsigned inner, unsigned channels) {
    float f[VEC];
    for (unsigned i = (blockIdx.x * blockDim.x + threadIdx.x) * VEC; i < n; i += gridDim.x * blockDim.x * VEC) {
        unsigned c = (i / inner) % channels;
        float sc = scale[c], sh = shift[c];
        ldv(x, i, f);
#pragma unroll
        for (int k = 0; k < VEC; k++) f[k] = f[k] * sc + sh;
        stv(y, i, f);
    }
}

extern "C" __global__ void norm_apply_v(const T* __restrict__ x, T* __restrict__ y,
                                        const float* __restrict__ stats,
                                        const float* __restrict__ w, const float* __restrict__ b,
                                        unsigned n, unsigned gs, unsigned A, unsigned B, unsigned S, int affine) {
    float f[VEC];
    for (unsigned i = (blockIdx.x * blockDim.x + threadIdx.x) * VEC; i < n; i += gridDim.x * blockDim.x * VEC) {
        unsigned g = i / gs, p = i - g * gs;
        float mean = stats[2 * g], rstd = stats[2 * g + 1];
        ldv(x, i, f);
        if (affine) {
            unsigned q = (g % A) * B + p / S;
            if (S == 1) {
#pragma unroll
                for (int k = 0; k < VEC; k++) f[k] = (f[k] - mean) * rstd * w[q + k] + b[q + k];
            } else {
                float ww = w[q], bb = b[q];
#pragma unroll
                for (int k = 0; k < VEC; k++) f[k] = (f[k] - mean) * rstd * ww + bb;
            }
        } else {
#pragma unroll
            for (int k = 0; k < VEC; k++) f[k] = (f[k] - mean) * rstd;
        }
        stv(y, i, f);
    }
}

// Partial statistics with vector loads: each vector's exact mean and M2, then Chan's combination
// (one division per vector).
extern "C" __global__ void norm_partial_v(const T* __restrict__ x, float* __restrict__ part,
                                          unsigned gs, unsigned chunk, int chunks) {
    unsigned g = blockIdx.x / chunks, c = blockIdx.x % chunks;
    unsigned lo = c * chunk, hi = lo + chunk < gs ? lo + chunk : gs;
    const T* xg = x + (size_t)g * gs;
    float n = 0.f, mean = 0.f, m2 = 0.f, f[VEC];
    for (unsigned p = lo + threadIdx.x * VEC; p < hi; p += blockDim.x * VEC) {
        ldv(xg, p, f);
        float s = 0.f;
#pragma unroll
        for (int k = 0; k < VEC; k++) s += f[k];
        float vm = s * (1.f / VEC), vm2 = 0.f;
#pragma unroll
        for (int k = 0; k < VEC; k++) { float d = f[k] - vm; vm2 += d * d; }
        combine(n, mean, m2, (float)VEC, vm, vm2);
    }
    block_welford(n, mean, m2);
    if (threadIdx.x == 0) {
        part[3 * blockIdx.x] = n; part[3 * blockIdx.x + 1] = mean; part[3 * blockIdx.x + 2] = m2;
    }
}

// Small groups with vector loads: VPT values per thread as VPT / VEC vectors.
extern "C" __global__ void norm_fused_v(const T* __restrict__ x, T* __restrict__ y,
                                        const float* __restrict__ w, const float* __restrict__ b,
                                        unsigned gs, unsigned A, unsigned B, unsigned S, float eps, int affine) {
    unsigned g = blockIdx.x;
    const T* xg = x + (size_t)g * gs;
    T* yg = y + (size_t)g * gs;
    float v[VPT];
    float sum = 0.f;
#pragma unroll
    for (int j = 0; j < VPT / VEC; j++) {
        unsigned p = (j * blockDim.x + threadIdx.x) * VEC;
        if (p < gs) {
            ldv(xg, p, v + j * VEC);
        } else {
#pragma unroll
            for (int k = 0; k < VEC; k++) v[j * VEC + k] = 0.f;
        }
#pragma unroll
        for (int k = 0; k < VEC; k++) sum += v[j * VEC + k];
    }
    __shared__ float red[32];
    float mean = block_sum(sum, red) / (float)gs, sq = 0.f;
#pragma unroll
    for (int j = 0; j < VPT / VEC; j++) {
        unsigned p = (j * blockDim.x + threadIdx.x) * VEC;
        if (p < gs) {
#pragma unroll
            for (int k = 0; k < VEC; k++) { float d = v[j * VEC + k] - mean; sq += d * d; }
        }
    }
    float rstd = rsqrtf(block_sum(sq, red) / (float)gs + eps);
#pragma unroll
    for (int j = 0; j < VPT / VEC; j++) {
        unsigned p = (j * blockDim.x + threadIdx.x) * VEC;
        if (p < gs) {
            float* f = v + j * VEC;
#pragma unroll
            for (int k = 0; k < VEC; k++) {
                float o = (f[k] - mean) * rstd;
                if (affine) { unsigned q = (g % A) * B + (p + k) / S; o = o * w[q] + b[q]; }
                f[k] = o;
            }
            stv(yg, p, f);
        }
    }
}
