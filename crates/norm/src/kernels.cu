// Normalization kernels for dimguard-norm, compiled at run time by NVRTC, once per storage type:
// -DDG_DTYPE=0 (fp32), 1 (fp16), 2 (bf16). Statistics are accumulated in fp32 and are exact
// two-pass statistics at every level (a warp's mean first, then the squares around it; warps,
// slabs and chunks combined with Chan's formula): never E[x^2] - E[x]^2. The variance is the
// biased one, as TensorRT's INormalizationLayer and PyTorch compute it. No headers are needed.
//
// Templates: V is the number of values moved per access (VEC = 16 bytes, or 1 for the scalar
// paths used when sizes are not multiples of VEC); P is the parameters' storage type (float, or
// the tensor's own type T when the values are exactly representable in it).

typedef unsigned short u16;
typedef unsigned long long u64;

__device__ __forceinline__ float f16_in(u16 h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ __forceinline__ u16 f16_out(float v) { u16 h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v)); return h; }
__device__ __forceinline__ float bf16_in(u16 h) { return __uint_as_float(((unsigned)h) << 16); }
__device__ __forceinline__ u16 bf16_out(float v) { u16 h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(v)); return h; }

#if DG_DTYPE == 0
typedef float T;
#define VEC 4
__device__ __forceinline__ float cvt_in(float v) { return v; }
__device__ __forceinline__ float cvt_out(float v) { return v; }
#elif DG_DTYPE == 1
typedef u16 T;
#define VEC 8
__device__ __forceinline__ float cvt_in(u16 v) { return f16_in(v); }
__device__ __forceinline__ u16 cvt_out(float v) { return f16_out(v); }
#else
typedef u16 T;
#define VEC 8
__device__ __forceinline__ float cvt_in(u16 v) { return bf16_in(v); }
__device__ __forceinline__ u16 cvt_out(float v) { return bf16_out(v); }
#endif

// Raw storage of V values (16 bytes for V = VEC, one T for V = 1), unpacked to and packed from
// floats.
template <int V> struct Raw;
template <> struct Raw<1> {
    T v;
    __device__ __forceinline__ void unpack(float* f) const { f[0] = cvt_in(v); }
    __device__ __forceinline__ static Raw pack(const float* f) { Raw r; r.v = cvt_out(f[0]); return r; }
};
template <> struct Raw<VEC> {
    uint4 v;
    __device__ __forceinline__ void unpack(float* f) const {
#if DG_DTYPE == 0
        f[0] = __uint_as_float(v.x); f[1] = __uint_as_float(v.y); f[2] = __uint_as_float(v.z); f[3] = __uint_as_float(v.w);
#else
        unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int k = 0; k < 4; k++) { f[2 * k] = cvt_in((u16)(w[k] & 0xffff)); f[2 * k + 1] = cvt_in((u16)(w[k] >> 16)); }
#endif
    }
    __device__ __forceinline__ static Raw pack(const float* f) {
        Raw r;
#if DG_DTYPE == 0
        r.v = make_uint4(__float_as_uint(f[0]), __float_as_uint(f[1]), __float_as_uint(f[2]), __float_as_uint(f[3]));
#else
        unsigned w[4];
#pragma unroll
        for (int k = 0; k < 4; k++) w[k] = (unsigned)cvt_out(f[2 * k]) | ((unsigned)cvt_out(f[2 * k + 1]) << 16);
        r.v = make_uint4(w[0], w[1], w[2], w[3]);
#endif
        return r;
    }
};
template <int V> __device__ __forceinline__ Raw<V> ldr(const T* p) { return *(const Raw<V>*)p; }
template <int V> __device__ __forceinline__ void str(T* p, Raw<V> r) { *(Raw<V>*)p = r; }

// Streaming (evict-first in L1 and L2) accesses for data read or written once, so that what is
// re-read (parameters) stays in L2.
template <int V> __device__ __forceinline__ Raw<V> ldr_cs(const T* p) {
    if (V == 1) return ldr<V>(p);
    Raw<V> r;
    uint4* v = (uint4*)&r;
    asm volatile("ld.global.cs.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v->x), "=r"(v->y), "=r"(v->z), "=r"(v->w) : "l"(p));
    return r;
}
template <int V> __device__ __forceinline__ void str_cs(T* p, Raw<V> r) {
    if (V == 1) { str<V>(p, r); return; }
    const uint4* v = (const uint4*)&r;
    asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};" :: "l"(p), "r"(v->x), "r"(v->y), "r"(v->z), "r"(v->w) : "memory");
}
// Asynchronous 16-byte copy global -> shared (no registers), evict-first in L2.
__device__ __forceinline__ u64 evict_first_policy() {
    u64 p;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
    return p;
}
__device__ __forceinline__ void cp16(void* smem, const void* g, u64 pol) {
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;" :: "r"(s), "l"(g), "l"(pol) : "memory");
}
// The same, cached in L1 too (parameters that the other blocks on the multiprocessor read).
__device__ __forceinline__ void cp16_ca(void* smem, const void* g) {
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" :: "r"(s), "l"(g) : "memory");
}
__device__ __forceinline__ void cp_wait_all() {
    asm volatile("cp.async.commit_group;\n\tcp.async.wait_group 0;" ::: "memory");
}

// Parameters: one value, or V consecutive values (16-byte aligned when V > 1).
__device__ __forceinline__ float ldp(const float* p, unsigned i) { return __ldg(p + i); }
template <int V> __device__ __forceinline__ void ldpv(const float* p, float* f) {
    if (V % 4 == 0) {
#pragma unroll
        for (int k = 0; k < V; k += 4) { float4 t = __ldg((const float4*)(p + k)); f[k] = t.x; f[k + 1] = t.y; f[k + 2] = t.z; f[k + 3] = t.w; }
    } else {
#pragma unroll
        for (int k = 0; k < V; k++) f[k] = __ldg(p + k);
    }
}
#if DG_DTYPE != 0
__device__ __forceinline__ float ldp(const u16* p, unsigned i) { return cvt_in(p[i]); }
template <int V> __device__ __forceinline__ void ldpv(const u16* p, float* f) {
    if (V == VEC) { Raw<VEC> r; r.v = __ldg((const uint4*)p); r.unpack(f); }
    else {
#pragma unroll
        for (int k = 0; k < V; k++) f[k] = cvt_in(p[k]);
    }
}
#endif

// V consecutive parameters from shared memory (16-byte aligned).
template <int V> __device__ __forceinline__ void ldps(const float* p, float* f) {
#pragma unroll
    for (int k = 0; k < V; k += 4) { float4 t = *(const float4*)(p + k); f[k] = t.x; f[k + 1] = t.y; f[k + 2] = t.z; f[k + 3] = t.w; }
}
#if DG_DTYPE != 0
template <int V> __device__ __forceinline__ void ldps(const u16* p, float* f) {
    Raw<VEC> r; r.v = *(const uint4*)p; r.unpack(f);
}
#endif

// y = (x - mean) * rstd * w[q] + b[q] for V values whose first parameter index is q (with S == 1
// the V values use V consecutive parameters, otherwise all use parameter q).
template <int V, typename P>
__device__ __forceinline__ void normalize_q(float* f, float mean, float rstd, const P* w, const P* b, unsigned q,
                                            unsigned S, int affine) {
    if (!affine) {
#pragma unroll
        for (int k = 0; k < V; k++) f[k] = (f[k] - mean) * rstd;
    } else if (S == 1) {
        float ww[V], bb[V];
        ldpv<V>(w + q, ww);
        ldpv<V>(b + q, bb);
#pragma unroll
        for (int k = 0; k < V; k++) f[k] = (f[k] - mean) * rstd * ww[k] + bb[k];
    } else {
        const float sc = rstd * ldp(w, q), bb = ldp(b, q);
#pragma unroll
        for (int k = 0; k < V; k++) f[k] = (f[k] - mean) * sc + bb;
    }
}
// The same for V values starting at group element p: q = (g % A) * B + p / S.
template <int V, typename P>
__device__ __forceinline__ void normalize(float* f, float mean, float rstd, const P* w, const P* b,
                                          unsigned g, unsigned p, unsigned A, unsigned B, unsigned S, int affine) {
    normalize_q<V, P>(f, mean, rstd, w, b, (g % A) * B + p / S, S, affine);
}

// Parameter index (g % A) * B + p / S for one thread's accesses of a group in increasing p (by
// `step` at most each time), without a division per access when S >= step.
struct Slot {
    unsigned base, q, S;
    u64 next;
    bool inc;
    __device__ __forceinline__ Slot(unsigned g, unsigned p0, unsigned A, unsigned B, unsigned S_, unsigned step)
        : base((g % A) * B), q(p0 / S_), S(S_), next((u64)(p0 / S_ + 1) * S_), inc(S_ >= step) {}
    __device__ __forceinline__ unsigned at(unsigned p) {
        if (S == 1) return base + p;
        if (!inc) return base + p / S;
        while (p >= next) { q++; next += S; }
        return base + q;
    }
};

// ---- Statistics --------------------------------------------------------------------------

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
    return v;
}

// Chan's combination of (n, mean, m2) with (nb, mb, m2b).
__device__ __forceinline__ void combine(float& n, float& mean, float& m2, float nb, float mb, float m2b) {
    if (nb == 0.f) return;
    float nn = n + nb;
    float d = mb - mean;
    mean += d * (nb / nn);
    m2 += m2b + d * d * (n * nb / nn);
    n = nn;
}

// Chan's combination in a canonical order: both lanes of a butterfly pair compute
// combine(lower lane, upper lane), so every lane ends with bit-identical statistics.
__device__ __forceinline__ void warp_combine(float& n, float& mean, float& m2) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        float n2 = __shfl_xor_sync(0xffffffff, n, o);
        float mean2 = __shfl_xor_sync(0xffffffff, mean, o);
        float m22 = __shfl_xor_sync(0xffffffff, m2, o);
        if (lane & o) {
            float a = n2, b = mean2, c = m22;
            combine(a, b, c, n, mean, m2);
            n = a; mean = b; m2 = c;
        } else {
            combine(n, mean, m2, n2, mean2, m22);
        }
    }
}

// Barrier `id` over `count` threads (id 0 with the whole block is __syncthreads).
__device__ __forceinline__ void bar_sync(unsigned id, unsigned count) {
    asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(count) : "memory");
}
__device__ __forceinline__ void bar_arrive(unsigned id, unsigned count) {
    asm volatile("bar.arrive %0, %1;" :: "r"(id), "r"(count) : "memory");
}

// Statistics of a set of whole warps (the block, or the warps of one role: threads `tid` =
// 0 .. count - 1 meeting at barrier `id`) in one barrier. Each thread passes its count and sum;
// `sq(mean)` returns the sum of its own values' squared deviations from `mean` (the thread
// re-reads its registers or its own shared-memory values). Every thread gets the same (n, mean,
// m2): each warp's exact two-pass statistics (wn, wmean, wm2), combined in closed form (Chan's
// formula over all warps at once: N = sum wn, mean = sum wn wmean / N, m2 = sum wm2 +
// wn (wmean - mean)^2) by two butterfly sums over the warps, whose results are bit-identical in
// every lane. `red` holds 3 floats per warp; the caller must put a barrier between two uses of
// the same `red`.
template <typename F>
__device__ __forceinline__ void warps_stats(unsigned tid, unsigned count, unsigned id, float cnt, float sum, F sq,
                                            float* red, float& n, float& mean, float& m2) {
    float wn = warp_sum(cnt), ws = warp_sum(sum);
    float wmean = wn > 0.f ? ws / wn : 0.f;
    float wm2 = warp_sum(sq(wmean));
    int lane = tid & 31, warp = tid >> 5;
    if (lane == 0) { red[3 * warp] = wn; red[3 * warp + 1] = wmean; red[3 * warp + 2] = wm2; }
    bar_sync(id, count);
    int nw = (count + 31) >> 5;
    const float qn = lane < nw ? red[3 * lane] : 0.f;
    const float qmean = lane < nw ? red[3 * lane + 1] : 0.f;
    const float qm2 = lane < nw ? red[3 * lane + 2] : 0.f;
    n = warp_sum(qn);
    const float s = warp_sum(qn * qmean);
    mean = n > 0.f ? s / n : 0.f;
    const float d = qmean - mean;
    m2 = warp_sum(qm2 + qn * d * d);
}
template <typename F>
__device__ __forceinline__ void block_stats(float cnt, float sum, F sq, float* red, float& n, float& mean, float& m2) {
    warps_stats(threadIdx.x, blockDim.x, 0, cnt, sum, sq, red, n, mean, m2);
}

// A thread's strided values p[i], i = tid * V + j * stride below len: their sum and count, and
// their squared deviations from mu.
template <int V>
__device__ __forceinline__ void own_sum(const T* p, unsigned len, unsigned stride, float& sum, float& cnt,
                                        unsigned tid = threadIdx.x) {
    for (unsigned i = tid * V; i < len; i += stride) {
        float f[V];
        ldr<V>(p + i).unpack(f);
#pragma unroll
        for (int q = 0; q < V; q++) sum += f[q];
        cnt += V;
    }
}
template <int V>
__device__ __forceinline__ float own_sq(const T* p, unsigned len, unsigned stride, float mu,
                                        unsigned tid = threadIdx.x) {
    float s = 0.f;
    for (unsigned i = tid * V; i < len; i += stride) {
        float f[V];
        ldr<V>(p + i).unpack(f);
#pragma unroll
        for (int q = 0; q < V; q++) { float d = f[q] - mu; s += d * d; }
    }
    return s;
}

// ---- BatchNorm (inference): y = x * scale[c] + shift[c] ---------------------------------
// c = (i / inner) % C. 16-byte accesses over the flat tensor whatever `inner` is: a vector
// inside one channel takes one scale and shift, a vector across two channels selects between
// the two (inner >= VEC), a vector across more walks them element by element. U accesses in
// flight per thread, their parameters loaded before the first store (nothing waits on a store);
// the n % VEC last elements are done by the last block. Scale and shift come from a parameter
// source: folded once (`Folded`, constants) or folded per access from the four run-time tensors
// (`Raw4`: scale = w * rsqrt(var + eps), shift = b - mean * scale), so that run-time parameters
// need no second launch.

// Value i of a device buffer of dtype code (0 fp32, 1 fp16, 2 bf16).
__device__ __forceinline__ float ldany(u64 p, int code, unsigned i) {
    if (code == 0) return __ldg((const float*)p + i);
    u16 h = __ldg((const unsigned short*)p + i);
    return code == 1 ? f16_in(h) : bf16_in(h);
}

// `at(c)`: channel c's scale and shift; `run<V>(c)`: those of the V channels c .. c + V - 1
// (c aligned to V).
struct Folded {
    const float* __restrict__ scale;
    const float* __restrict__ shift;
    template <typename I> __device__ __forceinline__ void at(I c, float& sc, float& sh) const {
        sc = __ldg(scale + c);
        sh = __ldg(shift + c);
    }
    template <int V, typename I> __device__ __forceinline__ void run(I c, float* sc, float* sh) const {
        ldpv<V>(scale + c, sc);
        ldpv<V>(shift + c, sh);
    }
};
// Pointers of 0 for weight or bias mean 1 and 0. The reciprocal square root is the hardware's
// (2 ulp; the tensors' storage rounding is far coarser for 16-bit, and 2e-5 relative holds for
// fp32).
// The four values are loaded before any is converted, so their round trips overlap.
__device__ __forceinline__ unsigned ldbits(u64 p, int code, unsigned i) {
    return code == 0 ? __ldg((const unsigned*)p + i) : (unsigned)__ldg((const unsigned short*)p + i);
}
__device__ __forceinline__ float frombits(unsigned v, int code) {
    return code == 0 ? __uint_as_float(v) : code == 1 ? f16_in((u16)v) : bf16_in((u16)v);
}
struct Raw4 {
    u64 w, b, mean, var;
    int wc, bc, mc, vc;
    float eps;
    template <typename I> __device__ __forceinline__ void at(I c, float& sc, float& sh) const {
        const unsigned i = (unsigned)c;
        const unsigned rw = w ? ldbits(w, wc, i) : 0u, rb = b ? ldbits(b, bc, i) : 0u;
        const unsigned rm = ldbits(mean, mc, i), rv = ldbits(var, vc, i);
        const float ww = w ? frombits(rw, wc) : 1.f, bb = b ? frombits(rb, bc) : 0.f;
        sc = ww * rsqrtf(frombits(rv, vc) + eps);
        sh = bb - frombits(rm, mc) * sc;
    }
    template <int V, typename I> __device__ __forceinline__ void run(I c, float* sc, float* sh) const {
#pragma unroll
        for (int k = 0; k < V; k++) at(c + k, sc[k], sh[k]);
    }
};

template <int V, typename I, typename Q>
__device__ __forceinline__ void bn_apply(float* f, I i, I inner, I C, const Q& q) {
    if (V > 1 && inner == 1 && C % V == 0) {
        // Channels last in memory ([N, C]): V consecutive channels, aligned.
        float sc[V], sh[V];
        q.template run<V>(i % C, sc, sh);
#pragma unroll
        for (int k = 0; k < V; k++) f[k] = f[k] * sc[k] + sh[k];
        return;
    }
    I r = i / inner;
    I c = r % C;
    r = i - r * inner;
    if (V == 1) {
        float sc, sh;
        q.at(c, sc, sh);
        f[0] = f[0] * sc + sh;
    } else if (r + V <= inner) {
        // One channel.
        float sc, sh;
        q.at(c, sc, sh);
#pragma unroll
        for (int k = 0; k < V; k++) f[k] = f[k] * sc + sh;
    } else if (inner >= V) {
        // Two channels: c for the first inner - r values, the next one (cyclically) for the rest.
        const I c1 = c + 1 == C ? 0 : c + 1, split = inner - r;
        float sc0, sh0, sc1, sh1;
        q.at(c, sc0, sh0);
        q.at(c1, sc1, sh1);
#pragma unroll
        for (int k = 0; k < V; k++) {
            const bool first = (I)k < split;
            f[k] = f[k] * (first ? sc0 : sc1) + (first ? sh0 : sh1);
        }
    } else {
#pragma unroll
        for (int k = 0; k < V; k++) {
            float sc, sh;
            q.at(c, sc, sh);
            f[k] = f[k] * sc + sh;
            if (++r == inner) { r = 0; if (++c == C) c = 0; }
        }
    }
}

// One tile of U accesses per thread per block (consecutive warps cover consecutive 512-byte
// runs), striding over tiles if the grid is smaller than the tensor: all loads, then all
// arithmetic, then all stores.
template <int U, typename I, typename Q>
__device__ __forceinline__ void bn_tiles(const T* __restrict__ x, T* __restrict__ y, const Q& q, I n, I inner,
                                         I C) {
    const I nv = n / VEC, tile = (I)blockDim.x * U;
    for (I t0 = (I)blockIdx.x * tile; t0 < nv; t0 += (I)gridDim.x * tile) {
        Raw<VEC> r[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            I v = t0 + u * blockDim.x + threadIdx.x;
            if (v < nv) r[u] = ldr_cs<VEC>(x + v * VEC);
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            I v = t0 + u * blockDim.x + threadIdx.x;
            if (v < nv) {
                float f[VEC];
                r[u].unpack(f);
                bn_apply<VEC, I>(f, v * VEC, inner, C, q);
                r[u] = Raw<VEC>::pack(f);
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            I v = t0 + u * blockDim.x + threadIdx.x;
            if (v < nv) str_cs<VEC>(y + v * VEC, r[u]);
        }
    }
    if (blockIdx.x == gridDim.x - 1)
        for (I i = nv * VEC + threadIdx.x; i < n; i += blockDim.x) {
            float f[1];
            ldr<1>(x + i).unpack(f);
            bn_apply<1, I>(f, i, inner, C, q);
            str<1>(y + i, Raw<1>::pack(f));
        }
}

// Folded parameters: bn_{32,64}_U(x, y, scale, shift, n, inner, C).
#define BN(NAME, U, I)                                                                              \
    extern "C" __global__ void NAME(const T* x, T* y, const float* scale, const float* shift, I n,  \
                                    I inner, I C) {                                                 \
        bn_tiles<U, I>(x, y, Folded{scale, shift}, n, inner, C);                                    \
    }
// Run-time parameters: bn_rt_{32,64}_U(x, y, w, wc, b, bc, mean, mc, var, vc, eps, n, inner, C).
#define BN_RT(NAME, U, I)                                                                           \
    extern "C" __global__ void NAME(const T* x, T* y, u64 w, int wc, u64 b, int bc, u64 mean,       \
                                    int mc, u64 var, int vc, float eps, I n, I inner, I C) {        \
        bn_tiles<U, I>(x, y, Raw4{w, b, mean, var, wc, bc, mc, vc, eps}, n, inner, C);             \
    }
// Planes of whole vectors (inner % VEC == 0): the grid is (chunks, C, N), so block (j, c, n)
// takes chunk j of plane n * C + c, whose values all have channel c: a thread gets one scale and
// shift (folded once from run-time parameters) for its U accesses, with no index arithmetic per
// access and no division: loads issued first, then the parameters, then the stores.
template <int U, typename Q>
__device__ __forceinline__ void bn_planes(const T* __restrict__ x, T* __restrict__ y, const Q& q, unsigned pv) {
    const size_t plane = (size_t)blockIdx.z * gridDim.y + blockIdx.y;
    const T* xp = x + plane * pv * VEC;
    T* yp = y + plane * pv * VEC;
    const unsigned v0 = blockIdx.x * blockDim.x * U + threadIdx.x;
    Raw<VEC> r[U];
#pragma unroll
    for (int u = 0; u < U; u++) {
        const unsigned v = v0 + u * blockDim.x;
        if (v < pv) r[u] = ldr_cs<VEC>(xp + (size_t)v * VEC);
    }
    float sc, sh;
    q.at(blockIdx.y, sc, sh);
#pragma unroll
    for (int u = 0; u < U; u++) {
        const unsigned v = v0 + u * blockDim.x;
        if (v < pv) {
            float f[VEC];
            r[u].unpack(f);
#pragma unroll
            for (int k = 0; k < VEC; k++) f[k] = f[k] * sc + sh;
            str_cs<VEC>(yp + (size_t)v * VEC, Raw<VEC>::pack(f));
        }
    }
}
// bnp_U(x, y, scale, shift, pv) and bnp_rt_U(x, y, w, wc, b, bc, mean, mc, var, vc, eps, pv):
// pv vectors per plane.
#define BNP(NAME, U)                                                                                \
    extern "C" __global__ void NAME(const T* x, T* y, const float* scale, const float* shift,      \
                                    unsigned pv) {                                                  \
        bn_planes<U>(x, y, Folded{scale, shift}, pv);                                               \
    }
#define BNP_RT(NAME, U)                                                                             \
    extern "C" __global__ void NAME(const T* x, T* y, u64 w, int wc, u64 b, int bc, u64 mean,       \
                                    int mc, u64 var, int vc, float eps, unsigned pv) {              \
        bn_planes<U>(x, y, Raw4{w, b, mean, var, wc, bc, mc, vc, eps}, pv);                         \
    }
BNP(bnp_1, 1)
BNP(bnp_2, 2)
BNP_RT(bnp_rt_1, 1)
BNP_RT(bnp_rt_2, 2)

BN(bn_32_1, 1, unsigned)
BN(bn_32_2, 2, unsigned)
BN(bn_64_2, 2, u64)
BN_RT(bn_rt_32_1, 1, unsigned)
BN_RT(bn_rt_32_2, 2, unsigned)
BN_RT(bn_rt_64_2, 2, u64)

// An empty kernel: the launch floor that the benchmark reports beside each cell.
extern "C" __global__ void empty() {}

// ---- Parameters given as device buffers at run time -----------------------------------------


// dst[i] = src[i] as f32 (fill where src is 0).
extern "C" __global__ void to_f32(u64 src, int code, unsigned n, float fill, float* dst) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src ? ldany(src, code, i) : fill;
}

// ---- Small groups: one block per group, values in registers --------------------------------
// Each thread holds NA accesses of V values as stored (16-bit values stay packed: half the
// registers, so more blocks fit), unpacked when used; element p of the group for access j is
// (j * blockDim.x + threadIdx.x) * V + k.

template <int V, int NA, typename P, bool staged = false>
__device__ __forceinline__ void fused_body(const T* __restrict__ x, T* __restrict__ y, const P* __restrict__ w,
                                           const P* __restrict__ b, unsigned gs, unsigned A, unsigned B,
                                           unsigned S, float eps, int affine) {
    constexpr int J = NA * VEC / V;
    const unsigned g = blockIdx.x;
    const T* xg = x + (size_t)g * gs;
    T* yg = y + (size_t)g * gs;
    Raw<V> r[J];
    float sum = 0.f, cnt = 0.f;
#pragma unroll
    for (int j = 0; j < J; j++) {
        const unsigned p = (j * blockDim.x + threadIdx.x) * V;
        if (p < gs) r[j] = ldr_cs<V>(xg + p);
    }
    // Per-element parameters staged (`staged`: vector plans, affine, A = 1, S = 1): each thread
    // copies the weights and biases of its own accesses into shared memory (w at 0, b at gs)
    // while its loads of x are in flight, so that their round trip is not paid after the
    // statistics; it reads back only what it copied itself, so its own wait suffices.
    extern __shared__ __align__(16) unsigned char smem_raw[];
    P* const sw = (P*)smem_raw;
    if (V == VEC && staged) {
#pragma unroll
        for (int j = 0; j < J; j++) {
            const unsigned p = (j * blockDim.x + threadIdx.x) * V;
            if (p < gs) {
#pragma unroll
                for (int k = 0; k < (int)(V * sizeof(P)); k += 16) {
                    cp16_ca((char*)(sw + p) + k, (const char*)(w + p) + k);
                    cp16_ca((char*)(sw + gs + p) + k, (const char*)(b + p) + k);
                }
            }
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
#pragma unroll
    for (int j = 0; j < J; j++) {
        const unsigned p = (j * blockDim.x + threadIdx.x) * V;
        if (p < gs) {
            float f[V];
            r[j].unpack(f);
#pragma unroll
            for (int k = 0; k < V; k++) sum += f[k];
            cnt += V;
        }
    }
    __shared__ float red[96];
    float n, mean, m2;
    block_stats(cnt, sum, [&](float m) {
        float s = 0.f;
#pragma unroll
        for (int j = 0; j < J; j++) {
            const unsigned p = (j * blockDim.x + threadIdx.x) * V;
            if (p < gs) {
                float f[V];
                r[j].unpack(f);
#pragma unroll
                for (int k = 0; k < V; k++) { float d = f[k] - m; s += d * d; }
            }
        }
        return s;
    }, red, n, mean, m2);
    float rstd = rsqrtf(m2 / n + eps);
    if (V == VEC && staged) {
        asm volatile("cp.async.wait_group 0;" ::: "memory");
#pragma unroll
        for (int j = 0; j < J; j++) {
            const unsigned p = (j * blockDim.x + threadIdx.x) * V;
            if (p < gs) {
                float f[V], ww[V], bb[V];
                r[j].unpack(f);
                ldps<V>(sw + p, ww);
                ldps<V>(sw + gs + p, bb);
#pragma unroll
                for (int k = 0; k < V; k++) f[k] = (f[k] - mean) * rstd * ww[k] + bb[k];
                str_cs<V>(yg + p, Raw<V>::pack(f));
            }
        }
    } else {
#pragma unroll
        for (int j = 0; j < J; j++) {
            const unsigned p = (j * blockDim.x + threadIdx.x) * V;
            if (p < gs) {
                float f[V];
                r[j].unpack(f);
                normalize<V, P>(f, mean, rstd, w, b, g, p, A, B, S, affine);
                str_cs<V>(yg + p, Raw<V>::pack(f));
            }
        }
    }
}

// fused_*(x, y, w, b, gs, A, B, S, eps, affine): NA = 4 (scalar and vector) or 8 (vector; at
// most 64 registers, so that two blocks of 512 threads fit on a multiprocessor). fused_vs_*:
// per-element parameters staged in 2 * gs parameters of dynamic shared memory, with the same
// launch bounds as NA = 8 (measured: rows of 4096 in fp32 0.0348 ms with these bounds, 0.0355
// with at most 48 registers, 0.0398 with at most 40; docs/NORM.md).
#define FUSED(NAME, V, NA, P, BOUNDS, STAGED)                                                       \
    extern "C" __global__ void BOUNDS NAME(const T* x, T* y, const P* w, const P* b, unsigned gs,   \
                                           unsigned A, unsigned B, unsigned S, float eps,           \
                                           int affine) {                                            \
        fused_body<V, NA, P, STAGED>(x, y, w, b, gs, A, B, S, eps, affine);                         \
    }
FUSED(fused_s_pf, 1, 4, float, , false)
FUSED(fused_v_pf, VEC, 4, float, , false)
FUSED(fused_s_pt, 1, 4, T, , false)
FUSED(fused_v_pt, VEC, 4, T, , false)
FUSED(fused_v8_pf, VEC, 8, float, __launch_bounds__(512, 2), false)
FUSED(fused_v8_pt, VEC, 8, T, __launch_bounds__(512, 2), false)
FUSED(fused_vs_pf, VEC, 4, float, __launch_bounds__(512, 2), true)
FUSED(fused_vs_pt, VEC, 4, T, __launch_bounds__(512, 2), true)

// ---- Slab kernels: the group's statistics and the counters ---------------------------------
// sync: [0] ticket, [1] finished blocks. slots: one 64-bit word per slab (t = g * k + j): the
// slab's (mean, m2) once published, SLOT_EMPTY before (its n follows from the geometry).

#define SLOT_EMPTY 0xffffffffffffffffull

// Publishes slab t's statistics (one thread): mean and m2 in one 64-bit relaxed store, which is
// single-copy atomic, so a reader sees either SLOT_EMPTY or both values and needs nothing else
// from the writer: no fence on either side (a release would make the writer wait for its own
// outstanding memory operations, an acquire-then-read costs the reader a second round trip). A
// NaN statistic is stored as the canonical NaN, so no published value is SLOT_EMPTY.
__device__ __forceinline__ void publish(u64* slot, float mean, float m2) {
    if (mean != mean) mean = __int_as_float(0x7fc00000);
    if (m2 != m2) m2 = __int_as_float(0x7fc00000);
    const u64 v = (u64)__float_as_uint(mean) | ((u64)__float_as_uint(m2) << 32);
    asm volatile("st.relaxed.gpu.global.b64 [%0], %1;" :: "l"(slot), "l"(v) : "memory");
}
__device__ __forceinline__ u64 ld_relaxed64(const u64* p) {
    u64 v;
    asm volatile("ld.relaxed.gpu.global.b64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

// One warp waits until the k slots of a group (slabs of `slab` elements, the last one shorter,
// in a group of gs) are published and combines them in a fixed order (lane l takes slabs l,
// l + 32, ..., then the butterfly): every block of the group gets bit-identical statistics, left
// by lane 0 in s_stat as (mean, rstd). The caller puts a barrier before others read s_stat.
__device__ __forceinline__ void group_stats(const u64* slots, unsigned k, unsigned gs, unsigned slab, float eps,
                                            float* s_stat) {
    const unsigned lane = threadIdx.x & 31;
    float gn, gm, gm2;
    for (;;) {
        gn = 0.f; gm = 0.f; gm2 = 0.f;
        bool ready = true;
        for (unsigned q = lane; q < k; q += 32) {
            const u64 v = ld_relaxed64(slots + q);
            ready &= v != SLOT_EMPTY;
            if (ready)
                combine(gn, gm, gm2, (float)min(slab, gs - q * slab), __uint_as_float((unsigned)v),
                        __uint_as_float((unsigned)(v >> 32)));
        }
        if (__all_sync(0xffffffff, ready)) break;
        __nanosleep(32);
    }
    warp_combine(gn, gm, gm2);
    if (lane == 0) { s_stat[0] = gm; s_stat[1] = rsqrtf(gm2 / gn + eps); }
}

// Called by every thread of every block once it is done: the last block to finish empties the
// `nslots` slots and zeroes the counters, so the next launch (or graph replay) finds them ready.
__device__ __forceinline__ void slab_finish(unsigned* sync, u64* slots, unsigned nslots) {
    __shared__ bool s_last;
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        s_last = atomicAdd(&sync[1], 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (s_last) {
        for (unsigned q = threadIdx.x; q < nslots; q += blockDim.x) slots[q] = SLOT_EMPTY;
        if (threadIdx.x == 0) {
            sync[0] = 0;
            sync[1] = 0;
        }
    }
}

// ---- Groups that fit on chip: a persistent grid of blocks, each holding a slab ---------------
// A group is cut into k slabs of `slab` elements (the last may be shorter). Blocks take slabs in
// order from a ticket counter; a block loads its slab into shared memory (the only read of the
// tensor), computes the slab's exact statistics, publishes them, waits until all k slabs of its
// group have published (k == 1: no wait), combines the k partial statistics in a fixed order
// (every block of the group gets bit-identical mean and rstd), and normalizes from shared memory.
// Tickets go in batches of m groups (slab 0 of each, then slab 1, ...; m = 1 unless per-element
// parameters are worth sharing through L2). No deadlock: tickets are taken in order, so only
// groups of the last batch that has been started can have waiting blocks, and the host
// guarantees m * k <= the number of co-resident blocks. The last block to finish empties the
// slots and resets the counters, so the next launch (or graph replay) finds them ready.

template <int V, typename P>
__device__ __forceinline__ void slab_body(const T* __restrict__ x, T* __restrict__ y, const P* __restrict__ w,
                                          const P* __restrict__ b, u64* slots, unsigned* sync, unsigned gs,
                                          unsigned slab, unsigned k, unsigned total, unsigned groups,
                                          unsigned m, unsigned A, unsigned B, unsigned S, float eps, int affine) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    __shared__ unsigned s_ticket;
    __shared__ float s_stat[2];
    __shared__ float red[96];
    const unsigned stride = blockDim.x * V;
    const u64 pol = evict_first_policy();
    // Slab t: group g, slab j of it, elements [lo, lo + len) of the group. Tickets go in batches
    // of m groups, slab-major inside a batch: slab j of the batch's groups run together and
    // share their per-element parameters through L2.
    auto locate = [&](unsigned t, unsigned& g, unsigned& j, unsigned& lo, unsigned& len) {
        const unsigned bt = t / (m * k), u = t - bt * (m * k);
        const unsigned mb = min(m, groups - bt * m);
        j = u / mb;
        g = bt * m + (u - j * mb);
        lo = j * slab;
        len = min(slab, gs - lo);
    };
    // Asynchronous copies straight to shared memory; each thread later reads only the values
    // it copied itself, so its own wait suffices (no barrier).
    auto prefetch = [&](unsigned t, T* buf) {
        unsigned g, j, lo, len;
        locate(t, g, j, lo, len);
        const T* xs = x + (size_t)g * gs + lo;
        for (unsigned i = threadIdx.x * V; i < len; i += stride) cp16(buf + i, xs + i, pol);
        asm volatile("cp.async.commit_group;" ::: "memory");
    };
    if (threadIdx.x == 0) s_ticket = atomicAdd(&sync[0], 1u);
    __syncthreads();
    unsigned t = s_ticket;
    T* buf = (T*)smem_raw;
    if (V == VEC && t < total) prefetch(t, buf);
    while (t < total) {
        unsigned g, j, lo, len;
        locate(t, g, j, lo, len);
        const T* xs = x + (size_t)g * gs + lo;
        T* ys = y + (size_t)g * gs + lo;
        float sum = 0.f, cnt = 0.f;
        if (V == VEC) {
            asm volatile("cp.async.wait_group 0;" ::: "memory");
            own_sum<V>(buf, len, stride, sum, cnt);
        } else {
            // Scalar path: four loads in flight per thread, raw values to shared memory.
            for (unsigned base = threadIdx.x * V; base < len; base += 4 * stride) {
                Raw<V> r[4];
#pragma unroll
                for (int u = 0; u < 4; u++) {
                    unsigned i = base + u * stride;
                    if (i < len) r[u] = ldr<V>(xs + i);
                }
#pragma unroll
                for (int u = 0; u < 4; u++) {
                    unsigned i = base + u * stride;
                    if (i < len) {
                        str<V>(buf + i, r[u]);
                        float f[V];
                        r[u].unpack(f);
#pragma unroll
                        for (int q = 0; q < V; q++) sum += f[q];
                        cnt += V;
                    }
                }
            }
        }
        float n, mean, m2;
        block_stats(cnt, sum, [&](float mu) { return own_sq<V>(buf, len, stride, mu); }, red, n, mean, m2);
        float rstd;
        if (k > 1) {
            if (threadIdx.x == 0) publish(slots + (size_t)g * k + j, mean, m2);
            if (threadIdx.x < 32) group_stats(slots + (size_t)g * k, k, gs, slab, eps, s_stat);
            __syncthreads();
            mean = s_stat[0];
            rstd = s_stat[1];
        } else {
            rstd = rsqrtf(m2 / n + eps);
        }
        // Normalize the thread's own values and store.
        Slot slot(g, lo + threadIdx.x * V, A, B, S, stride);
        for (unsigned i = threadIdx.x * V; i < len; i += stride) {
            float f[V];
            ldr<V>(buf + i).unpack(f);
            normalize_q<V, P>(f, mean, rstd, w, b, slot.at(lo + i), S, affine);
            str_cs<V>(ys + i, Raw<V>::pack(f));
        }
        // The next ticket is taken only now, once this block is done with its slab: a block never
        // holds an unpublished slab while it waits (no deadlock), and the slabs of a group are
        // taken by blocks that start loading them at once. The next slab's copies go to the same
        // buffer: each thread overwrites only values it has just normalized itself.
        if (threadIdx.x == 0) s_ticket = atomicAdd(&sync[0], 1u);
        __syncthreads();
        t = s_ticket;
        if (V == VEC && t < total) prefetch(t, buf);
    }
    slab_finish(sync, slots, k > 1 ? total : 0);
}

#define SLAB(NAME, V, P)                                                                            \
    extern "C" __global__ void __launch_bounds__(256, 4)                                            \
        NAME(const T* x, T* y, const P* w, const P* b, u64* slots, unsigned* sync, unsigned gs,     \
             unsigned slab, unsigned k, unsigned total, unsigned groups, unsigned m, unsigned A,    \
             unsigned B, unsigned S, float eps, int affine) {                                       \
        slab_body<V, P>(x, y, w, b, slots, sync, gs, slab, k, total, groups, m, A, B, S, eps,       \
                        affine);                                                                    \
    }
SLAB(slab_s_pf, 1, float)
SLAB(slab_v_pf, VEC, float)
SLAB(slab_s_pt, 1, T)
SLAB(slab_v_pt, VEC, T)

// ---- The slab kernel, pipelined: producer and consumer warps, two buffers per block ----------
// The same slabs, tickets (m = 1), statistics and reset as `slab`, with the block split in two
// roles over two slab buffers. Producer warps (the first half) take a ticket whenever a buffer is
// free, copy the slab in (`cp.async`, evict-first), compute and publish its statistics at once;
// consumer warps (the second half) wait for each buffer's group, normalize and store, and free the
// buffer. So a block always has a slab loading while it waits and normalizes, and a slab's
// statistics are published as soon as it has landed, whatever the block's consumers are doing.
// The roles hand buffers over with named barriers: FULL[b] (producers arrive, consumers wait) and
// EMPTY[b] (consumers arrive, producers wait); ids 1-4, then 5 (producers) and 6 (consumers).
// No deadlock with k <= the number of co-resident blocks: a ticket is taken only into a free
// buffer and its slab is published without waiting on anything, and tickets go in order, so every
// slab of the lowest unfinished group is taken (all buffers hold slabs of it or of finished groups).

template <typename P>
__device__ __forceinline__ void pipe_body(const T* __restrict__ x, T* __restrict__ y, const P* __restrict__ w,
                                          const P* __restrict__ b, u64* slots, unsigned* sync, unsigned gs,
                                          unsigned slab, unsigned k, unsigned total, unsigned groups,
                                          unsigned A, unsigned B, unsigned S, float eps, int affine) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    __shared__ unsigned s_ticket[2];
    __shared__ float s_stat[2][2];
    __shared__ float red[2][96];
    const unsigned half = blockDim.x / 2;
    const bool producer = threadIdx.x < half;
    const unsigned tid = producer ? threadIdx.x : threadIdx.x - half;
    const unsigned stride = half * VEC;
    T* const buf0 = (T*)smem_raw;
    const unsigned FULL = 1, EMPTY = 3, PROD = 5, CONS = 6;
    unsigned it = 0;
    if (producer) {
        const u64 pol = evict_first_policy();
        for (;; it++) {
            const unsigned c = it & 1;
            T* const bc = buf0 + c * slab;
            if (it >= 2) bar_sync(EMPTY + c, blockDim.x);
            if (tid == 0) s_ticket[c] = atomicAdd(&sync[0], 1u);
            bar_sync(PROD, half);
            const unsigned t = s_ticket[c];
            if (t >= total) {
                bar_arrive(FULL + c, blockDim.x);
                break;
            }
            const unsigned g = t / k, lo = (t - g * k) * slab, len = min(slab, gs - lo);
            const T* xs = x + (size_t)g * gs + lo;
            for (unsigned i = tid * VEC; i < len; i += stride) cp16(bc + i, xs + i, pol);
            cp_wait_all();
            float sum = 0.f, cnt = 0.f, n, mean, m2;
            own_sum<VEC>(bc, len, stride, sum, cnt, tid);
            warps_stats(tid, half, PROD, cnt, sum, [&](float mu) { return own_sq<VEC>(bc, len, stride, mu, tid); },
                        red[c], n, mean, m2);
            if (tid == 0) {
                if (k > 1) {
                    publish(slots + t, mean, m2);
                } else {
                    s_stat[c][0] = mean;
                    s_stat[c][1] = rsqrtf(m2 / n + eps);
                }
            }
            bar_arrive(FULL + c, blockDim.x);
        }
        // Match the consumers' last EMPTY arrival.
        if (it >= 1) bar_sync(EMPTY + ((it - 1) & 1), blockDim.x);
    } else {
        for (;; it++) {
            const unsigned c = it & 1;
            T* const bc = buf0 + c * slab;
            bar_sync(FULL + c, blockDim.x);
            const unsigned t = s_ticket[c];
            if (t >= total) break;
            const unsigned g = t / k, lo = (t - g * k) * slab, len = min(slab, gs - lo);
            if (k > 1) {
                if (tid < 32) group_stats(slots + (size_t)g * k, k, gs, slab, eps, s_stat[c]);
                bar_sync(CONS, half);
            }
            const float mean = s_stat[c][0], rstd = s_stat[c][1];
            T* ys = y + (size_t)g * gs + lo;
            Slot slot(g, lo + tid * VEC, A, B, S, stride);
            for (unsigned i = tid * VEC; i < len; i += stride) {
                float f[VEC];
                ldr<VEC>(bc + i).unpack(f);
                normalize_q<VEC, P>(f, mean, rstd, w, b, slot.at(lo + i), S, affine);
                str_cs<VEC>(ys + i, Raw<VEC>::pack(f));
            }
            bar_arrive(EMPTY + c, blockDim.x);
        }
    }
    slab_finish(sync, slots, k > 1 ? total : 0);
}

// The same arguments as `slab` (m is 1 and unused).
#define PIPE(NAME, P)                                                                               \
    extern "C" __global__ void __launch_bounds__(512, 3)                                            \
        NAME(const T* x, T* y, const P* w, const P* b, u64* slots, unsigned* sync, unsigned gs,     \
             unsigned slab, unsigned k, unsigned total, unsigned groups, unsigned m, unsigned A,    \
             unsigned B, unsigned S, float eps, int affine) {                                       \
        pipe_body<P>(x, y, w, b, slots, sync, gs, slab, k, total, groups, A, B, S, eps, affine);    \
    }
PIPE(pipe_pf, float)
PIPE(pipe_pt, T)

#if __CUDA_ARCH__ >= 900
// ---- Groups of a few slabs: one thread-block cluster per group -------------------------------
// Hopper's thread-block clusters (compute capability 9.0): the CL blocks of a cluster are
// scheduled together and can write each other's shared memory. Block r of cluster g copies slab r
// of group g into its shared memory (the last slabs may be shorter, or empty), computes the
// slab's exact statistics and writes (mean, m2) into slot r of every block of the cluster; after
// the cluster barrier (release / acquire: those writes are visible) every block combines the CL
// slots in the same order (bit-identical statistics in every block), normalizes its slab from
// shared memory and stores it. No tickets, no counters in global memory, no condition on the
// grid: clusters are scheduled whole, and a grid larger than the device runs in waves.

__device__ __forceinline__ unsigned cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

template <int CL, typename P>
__device__ __forceinline__ void cluster_body(const T* __restrict__ x, T* __restrict__ y, const P* __restrict__ w,
                                             const P* __restrict__ b, unsigned gs, unsigned slab, unsigned A,
                                             unsigned B, unsigned S, float eps, int affine) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    __shared__ float red[96];
    __shared__ float2 s_part[CL];
    // No block writes another's shared memory before every block of the cluster has started:
    // arrive now, wait just before those writes.
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
    const unsigned r = cluster_rank(), g = blockIdx.x / CL;
    const unsigned lo = min(r * slab, gs), len = min(slab, gs - lo);
    const unsigned stride = blockDim.x * VEC;
    const T* xs = x + (size_t)g * gs + lo;
    T* ys = y + (size_t)g * gs + lo;
    T* const buf = (T*)smem_raw;
    const u64 pol = evict_first_policy();
    for (unsigned i = threadIdx.x * VEC; i < len; i += stride) cp16(buf + i, xs + i, pol);
    cp_wait_all();
    // Each thread reads back only the values it copied itself: its own wait suffices.
    float sum = 0.f, cnt = 0.f, n, mean, m2;
    own_sum<VEC>(buf, len, stride, sum, cnt);
    block_stats(cnt, sum, [&](float mu) { return own_sq<VEC>(buf, len, stride, mu); }, red, n, mean, m2);
    asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
    if (threadIdx.x < CL) {
        const unsigned local = (unsigned)__cvta_generic_to_shared(&s_part[r]);
        unsigned remote;
        asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(threadIdx.x));
        asm volatile("st.shared::cluster.v2.f32 [%0], {%1, %2};" :: "r"(remote), "f"(mean), "f"(m2) : "memory");
    }
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
    // Chan's formula over the CL slabs in closed form, in slab order.
    float total = 0.f;
#pragma unroll
    for (int q = 0; q < CL; q++) total += (float)min(slab, gs - min(q * slab, gs)) * s_part[q].x;
    const float gmean = total / (float)gs;
    float gm2 = 0.f;
#pragma unroll
    for (int q = 0; q < CL; q++) {
        const float d = s_part[q].x - gmean;
        gm2 += s_part[q].y + (float)min(slab, gs - min(q * slab, gs)) * d * d;
    }
    const float rstd = rsqrtf(gm2 / (float)gs + eps);
    Slot slot(g, lo + threadIdx.x * VEC, A, B, S, stride);
    for (unsigned i = threadIdx.x * VEC; i < len; i += stride) {
        float f[VEC];
        ldr<VEC>(buf + i).unpack(f);
        normalize_q<VEC, P>(f, gmean, rstd, w, b, slot.at(lo + i), S, affine);
        str_cs<VEC>(ys + i, Raw<VEC>::pack(f));
    }
}

// Arguments: x, y, scale, bias, group size, slab size, parameter index (A, B, S), eps, affine.
// The grid is groups * CL blocks.
#define CLUSTER(NAME, CL, P)                                                                        \
    extern "C" __global__ void __cluster_dims__(CL, 1, 1)                                           \
        NAME(const T* x, T* y, const P* w, const P* b, unsigned gs, unsigned slab, unsigned A,      \
             unsigned B, unsigned S, float eps, int affine) {                                       \
        cluster_body<CL, P>(x, y, w, b, gs, slab, A, B, S, eps, affine);                            \
    }
CLUSTER(cluster2_pf, 2, float)
CLUSTER(cluster2_pt, 2, T)
CLUSTER(cluster4_pf, 4, float)
CLUSTER(cluster4_pt, 4, T)
CLUSTER(cluster8_pf, 8, float)
CLUSTER(cluster8_pt, 8, T)
#endif

// ---- Groups larger than the chip holds: three passes ---------------------------------------
// Partial statistics per chunk (one block per (group, chunk)), combine per group, normalize.

// Visits every value of a thread's NA accesses of V values (access a at element
// (a * blockDim.x + threadIdx.x) * V, below len).
template <int V, int NA, typename F>
__device__ __forceinline__ void each_value(const Raw<V>* r, unsigned len, F visit) {
#pragma unroll
    for (int a = 0; a < NA; a++) {
        if ((a * blockDim.x + threadIdx.x) * V < len) {
            float f[V];
            r[a].unpack(f);
#pragma unroll
            for (int q = 0; q < V; q++) visit(f[q]);
        }
    }
}

// A chunk is at most 256 threads x 64 values: every thread issues all its loads at once and keeps
// them in registers (as stored, unpacked when used) for the squares: one read of the chunk.
#define CHUNK_PER_THREAD 64
template <int V>
__device__ __forceinline__ void partial_body(const T* __restrict__ x, float* __restrict__ part, unsigned gs,
                                             unsigned chunk, unsigned chunks) {
    const unsigned g = blockIdx.x / chunks, c = blockIdx.x % chunks;
    const unsigned lo = c * chunk, len = min(chunk, gs - lo);
    const T* xs = x + (size_t)g * gs + lo;
    constexpr int NA = CHUNK_PER_THREAD / V;
    Raw<V> r[NA];
#pragma unroll
    for (int a = 0; a < NA; a++) {
        const unsigned i = (a * blockDim.x + threadIdx.x) * V;
        if (i < len) r[a] = ldr_cs<V>(xs + i);
    }
    float sum = 0.f, cnt = 0.f;
    each_value<V, NA>(r, len, [&](float v) { sum += v; cnt += 1.f; });
    __shared__ float red[96];
    float n, mean, m2;
    block_stats(cnt, sum, [&](float mu) {
        float s = 0.f;
        each_value<V, NA>(r, len, [&](float v) { float d = v - mu; s += d * d; });
        return s;
    }, red, n, mean, m2);
    if (threadIdx.x == 0) { part[3 * blockIdx.x] = n; part[3 * blockIdx.x + 1] = mean; part[3 * blockIdx.x + 2] = m2; }
}
extern "C" __global__ void partial_s(const T* x, float* part, unsigned gs, unsigned chunk, unsigned chunks) { partial_body<1>(x, part, gs, chunk, chunks); }
extern "C" __global__ void partial_v(const T* x, float* part, unsigned gs, unsigned chunk, unsigned chunks) { partial_body<VEC>(x, part, gs, chunk, chunks); }

// One warp per group: lane l combines chunks l, l + 32, ... in order, then the butterfly.
extern "C" __global__ void finalize(const float* __restrict__ part, float* __restrict__ stats, unsigned groups,
                                    unsigned chunks, float eps) {
    const unsigned g = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    if (g >= groups) return;
    float n = 0.f, mean = 0.f, m2 = 0.f;
#pragma unroll 8
    for (unsigned c = lane; c < chunks; c += 32) {
        const float* p = part + 3 * ((size_t)g * chunks + c);
        combine(n, mean, m2, p[0], p[1], p[2]);
    }
    warp_combine(n, mean, m2);
    if (lane == 0) {
        stats[2 * g] = mean;
        stats[2 * g + 1] = rsqrtf(m2 / n + eps);
    }
}

template <int V, typename P>
__device__ __forceinline__ void apply_body(const T* __restrict__ x, T* __restrict__ y, const float* __restrict__ stats,
                                           const P* __restrict__ w, const P* __restrict__ b, unsigned n, unsigned gs,
                                           unsigned A, unsigned B, unsigned S, int affine) {
    for (unsigned i = (blockIdx.x * blockDim.x + threadIdx.x) * V; i < n; i += gridDim.x * blockDim.x * V) {
        unsigned g = i / gs, p = i - g * gs;
        float f[V];
        ldr<V>(x + i).unpack(f);
        normalize<V, P>(f, stats[2 * g], stats[2 * g + 1], w, b, g, p, A, B, S, affine);
        str<V>(y + i, Raw<V>::pack(f));
    }
}
#define APPLY(NAME, V, P)                                                                           \
    extern "C" __global__ void NAME(const T* x, T* y, const float* stats, const P* w, const P* b,  \
                                    unsigned n, unsigned gs, unsigned A, unsigned B, unsigned S,    \
                                    int affine) {                                                   \
        apply_body<V, P>(x, y, stats, w, b, n, gs, A, B, S, affine);                               \
    }
APPLY(apply_s_pf, 1, float)
APPLY(apply_v_pf, VEC, float)
APPLY(apply_s_pt, 1, T)
APPLY(apply_v_pt, VEC, T)

// Per-element parameters (LayerNorm): column order. A thread takes element position p of the
// group and normalizes it in every group, so each parameter is read once per launch instead of
// once per group; eight groups' loads in flight.
template <int V, typename P>
__device__ __forceinline__ void apply_cols_body(const T* __restrict__ x, T* __restrict__ y,
                                                const float* __restrict__ stats, const P* __restrict__ w,
                                                const P* __restrict__ b, unsigned gs, unsigned groups) {
    const unsigned nv = gs / V;
    for (unsigned v = blockIdx.x * blockDim.x + threadIdx.x; v < nv; v += gridDim.x * blockDim.x) {
        const unsigned p = v * V;
        float ww[V], bb[V];
        ldpv<V>(w + p, ww);
        ldpv<V>(b + p, bb);
        for (unsigned g0 = 0; g0 < groups; g0 += 8) {
            Raw<V> r[8];
#pragma unroll
            for (int u = 0; u < 8; u++)
                if (g0 + u < groups) r[u] = ldr_cs<V>(x + (size_t)(g0 + u) * gs + p);
#pragma unroll
            for (int u = 0; u < 8; u++) {
                const unsigned g = g0 + u;
                if (g < groups) {
                    float f[V];
                    r[u].unpack(f);
                    const float mean = stats[2 * g], rstd = stats[2 * g + 1];
#pragma unroll
                    for (int k = 0; k < V; k++) f[k] = (f[k] - mean) * rstd * ww[k] + bb[k];
                    str_cs<V>(y + (size_t)g * gs + p, Raw<V>::pack(f));
                }
            }
        }
    }
}
#define APPLY_COLS(NAME, V, P)                                                                      \
    extern "C" __global__ void NAME(const T* x, T* y, const float* stats, const P* w, const P* b,  \
                                    unsigned gs, unsigned groups) {                                 \
        apply_cols_body<V, P>(x, y, stats, w, b, gs, groups);                                       \
    }
APPLY_COLS(apply_cols_s_pf, 1, float)
APPLY_COLS(apply_cols_v_pf, VEC, float)
APPLY_COLS(apply_cols_s_pt, 1, T)
APPLY_COLS(apply_cols_v_pt, VEC, T)
