// C = A·B, row-major, any M, N, K. Two variants:
//   matmul_naive_<t>: one thread per element of C (the workshop's first version, the "before").
//   matmul_shared_<t>: 16x16 tiles of A and B in shared memory, one thread per element of C (its second version).
//   matmul_tiled_<t>: the classic CUDA-core GEMM. A block of TX×TY = 256 threads computes a BM×BN tile of C,
//     each thread a (2·VW)×(2·VW) register micro-tile made of 2×2 sub-blocks VW wide, VW = 16 bytes / element
//     (f32: 128×128 tiles, 8×8 per thread; f64: 64×64 tiles, 4×4 per thread). K advances BK at a time through
//     double-buffered shared memory: A's tile is stored transposed (As[k][m], rows padded by one vector against
//     bank conflicts on the transposing store) so that both operands are read as 16-byte vectors (LDS.128), and
//     the next tile's global loads are in flight while the current one is multiplied. Loads at the matrix edges
//     write zeros into shared memory, stores are guarded; interior tiles take 16-byte loads and stores.
// kernels/matmul/matmul.cl has the same structure; docs/algorithms/matmul.md explains the choices.
#include "../common/gpuws_cuda.cuh"
#include "matmul_layout.h"

namespace
{

template <typename T> struct vec;
template <> struct vec<float> {
    using type = float4;
    static constexpr int width = 4;
    __device__ static void unpack(float4 v, float *r) { r[0] = v.x, r[1] = v.y, r[2] = v.z, r[3] = v.w; }
    __device__ static float4 pack(const float *r) { return make_float4(r[0], r[1], r[2], r[3]); }
};
template <> struct vec<double> {
    using type = double2;
    static constexpr int width = 2;
    __device__ static void unpack(double2 v, double *r) { r[0] = v.x, r[1] = v.y; }
    __device__ static double2 pack(const double *r) { return make_double2(r[0], r[1]); }
};

constexpr unsigned GROUP_M = MATMUL_GROUP_M;
static_assert(vec<float>::width == MATMUL_VW_F32 && vec<double>::width == MATMUL_VW_F64, "matmul_layout.h");

template <typename T>
__device__ void matmul_naive(const T *__restrict__ A, const T *__restrict__ B, T *__restrict__ C, unsigned M,
                             unsigned N, unsigned K)
{
    // x runs along a row of C, so a warp reads one row of B coalesced and broadcasts one element of A.
    const unsigned col = blockIdx.x * blockDim.x + threadIdx.x;
    for (unsigned row = blockIdx.y * blockDim.y + threadIdx.y; row < M; row += gridDim.y * blockDim.y) {
        if (col >= N) continue;
        const T *a = A + (size_t)row * K;
        T acc = 0;
        for (unsigned l = 0; l < K; l++) acc += a[l] * B[(size_t)l * N + col];
        C[(size_t)row * N + col] = acc;
    }
}

// A 16x16 block per 16x16 tile of C; y loops over tile rows when the grid is shorter than M / 16.
template <typename T>
__device__ void matmul_shared(const T *__restrict__ A, const T *__restrict__ B, T *__restrict__ C, unsigned M,
                              unsigned N, unsigned K)
{
    constexpr unsigned TS = MATMUL_SHARED_TILE;
    __shared__ T As[TS][TS], Bs[TS][TS];
    const unsigned tx = threadIdx.x, ty = threadIdx.y, col = blockIdx.x * TS + tx;
    for (unsigned r0 = blockIdx.y * TS; r0 < M; r0 += gridDim.y * TS) {
        const unsigned row = r0 + ty;
        T acc = 0;
        for (unsigned t = 0; t < K; t += TS) {
            As[ty][tx] = row < M && t + tx < K ? A[(size_t)row * K + t + tx] : T(0);
            Bs[ty][tx] = t + ty < K && col < N ? B[(size_t)(t + ty) * N + col] : T(0);
            __syncthreads();
            for (unsigned l = 0; l < TS; l++) acc += As[ty][l] * Bs[l][tx];
            __syncthreads();
        }
        if (row < M && col < N) C[(size_t)row * N + col] = acc;
    }
}

template <typename T, int TX, int TY, int BK>
__device__ __forceinline__ void matmul_tiled(const T *__restrict__ A, const T *__restrict__ B, T *__restrict__ C,
                                             unsigned M, unsigned N, unsigned K)
{
    using V = typename vec<T>::type;
    constexpr int VW = vec<T>::width, NT = TX * TY;
    constexpr int BM = 2 * TY * VW, BN = 2 * TX * VW;
    constexpr int AV = BM * BK / VW / NT, AROWS = NT / (BK / VW); // A vectors per thread per K step, row stride
    constexpr int BV = BK * BN / VW / NT, BROWS = NT / (BN / VW);
    static_assert(BK % VW == 0 && AV * NT * VW == BM * BK && BV * NT * VW == BK * BN, "tile shape");
    static_assert(NT % (BK / VW) == 0 && NT % (BN / VW) == 0, "load mapping");
    __shared__ __align__(16) T As[2][BK][BM + VW];
    __shared__ __align__(16) T Bs[2][BK][BN];

    const unsigned tid = threadIdx.x, tx = tid % TX, ty = tid / TX;
    // Tile order: GROUP_M tile rows walk the tile columns together, so their B tiles are shared in L2.
    const unsigned mt = (M + BM - 1) / BM, nt = (N + BN - 1) / BN, t = blockIdx.x;
    const unsigned group = t / (GROUP_M * nt), first = group * GROUP_M;
    const unsigned gsize = min(mt - first, GROUP_M), in = t - group * GROUP_M * nt;
    const unsigned m0 = (first + in % gsize) * BM, n0 = (in / gsize) * BN;

    // This thread's share of each K step: A rows ar + v·AROWS at columns ak.., B rows bk + v·BROWS at columns bn..
    const unsigned ar = tid / (BK / VW), ak = tid % (BK / VW) * VW;
    const unsigned bk = tid / (BN / VW), bn = tid % (BN / VW) * VW;
    const bool vec_a = K % VW == 0, vec_b = N % VW == 0; // rows start 16-byte aligned (buffers are 256-aligned)
    const bool b_cols = vec_b && n0 + bn + VW <= N;
    const T *pa = A + (size_t)(m0 + ar) * K + ak; // advanced by BK per K step; read only where valid
    const T *pb = B + (size_t)bk * N + n0 + bn;   // advanced by BK rows per K step
    const size_t b_step = (size_t)BK * N;

    T ra[AV][VW], rb[BV][VW];
    T acc[2 * VW][2 * VW];
#pragma unroll
    for (int i = 0; i < 2 * VW; i++)
#pragma unroll
        for (int j = 0; j < 2 * VW; j++) acc[i][j] = T(0);

    // Step kt loads K step kt (global -> registers), multiplies step kt - 1 (in shared buffer (kt - 1) & 1) while
    // those loads are in flight, then stores step kt to buffer kt & 1. One barrier per step: the buffer stored to
    // was last read in step kt - 1, before the previous barrier.
    const unsigned ktiles = (K + BK - 1) / BK;
    for (unsigned kt = 0; kt <= ktiles; kt++) {
        const bool load = kt < ktiles;
        if (load) { // zeros past the edges
            const unsigned k0 = kt * BK;
#pragma unroll
            for (int v = 0; v < AV; v++) {
                const unsigned r = m0 + ar + v * AROWS, k = k0 + ak;
                const T *p = pa + (size_t)v * AROWS * K;
                if (vec_a && r < M && k + VW <= K) {
                    vec<T>::unpack(__ldg(reinterpret_cast<const V *>(p)), ra[v]);
                } else {
#pragma unroll
                    for (int c = 0; c < VW; c++) ra[v][c] = r < M && k + c < K ? p[c] : T(0);
                }
            }
#pragma unroll
            for (int v = 0; v < BV; v++) {
                const unsigned k = k0 + bk + v * BROWS, n = n0 + bn;
                const T *p = pb + (size_t)v * BROWS * N;
                if (b_cols && k < K) {
                    vec<T>::unpack(__ldg(reinterpret_cast<const V *>(p)), rb[v]);
                } else {
#pragma unroll
                    for (int c = 0; c < VW; c++) rb[v][c] = k < K && n + c < N ? p[c] : T(0);
                }
            }
            pa += BK;
            pb += b_step;
        }
        if (kt > 0) {
            const int cur = (kt - 1) & 1;
#pragma unroll
            for (int k = 0; k < BK; k++) {
                T a[2 * VW], b[2 * VW];
                vec<T>::unpack(*reinterpret_cast<const V *>(&As[cur][k][ty * VW]), a);
                vec<T>::unpack(*reinterpret_cast<const V *>(&As[cur][k][BM / 2 + ty * VW]), a + VW);
                vec<T>::unpack(*reinterpret_cast<const V *>(&Bs[cur][k][tx * VW]), b);
                vec<T>::unpack(*reinterpret_cast<const V *>(&Bs[cur][k][BN / 2 + tx * VW]), b + VW);
#pragma unroll
                for (int i = 0; i < 2 * VW; i++)
#pragma unroll
                    for (int j = 0; j < 2 * VW; j++) acc[i][j] = fma(a[i], b[j], acc[i][j]);
            }
        }
        if (load) { // A transposed (one scalar store per element), B as vectors
            const int buf = kt & 1;
#pragma unroll
            for (int v = 0; v < AV; v++)
#pragma unroll
                for (int c = 0; c < VW; c++) As[buf][ak + c][ar + v * AROWS] = ra[v][c];
#pragma unroll
            for (int v = 0; v < BV; v++) *reinterpret_cast<V *>(&Bs[buf][bk + v * BROWS][bn]) = vec<T>::pack(rb[v]);
        }
        __syncthreads();
    }

    // Micro-tile row i is tile row ty·VW + i (i < VW) or BM/2 + ty·VW + i - VW; columns likewise.
#pragma unroll
    for (int i = 0; i < 2 * VW; i++) {
        const unsigned row = m0 + (i < VW ? ty * VW + i : BM / 2 + ty * VW + (i - VW));
        if (row >= M) continue;
        T *crow = C + (size_t)row * N;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const unsigned col = n0 + h * (BN / 2) + tx * VW;
            if (vec_b && col + VW <= N) {
                *reinterpret_cast<V *>(crow + col) = vec<T>::pack(&acc[i][h * VW]);
            } else {
#pragma unroll
                for (int c = 0; c < VW; c++)
                    if (col + c < N) crow[col + c] = acc[i][h * VW + c];
            }
        }
    }
}

} // namespace

// The naive kernels take any 2-D block (y loops over rows). The tiled ones take exactly 256 threads in x and one
// block per tile of C: grid = tiles in x (kernels/matmul/matmul.c launches them so).
extern "C" __global__ void matmul_naive_f32(const float *A, const float *B, float *C, unsigned M, unsigned N,
                                            unsigned K)
{
    matmul_naive(A, B, C, M, N, K);
}
extern "C" __global__ void matmul_naive_f64(const double *A, const double *B, double *C, unsigned M, unsigned N,
                                            unsigned K)
{
    matmul_naive(A, B, C, M, N, K);
}
extern "C" __global__ void matmul_shared_f32(const float *A, const float *B, float *C, unsigned M, unsigned N,
                                             unsigned K)
{
    matmul_shared(A, B, C, M, N, K);
}
extern "C" __global__ void matmul_shared_f64(const double *A, const double *B, double *C, unsigned M, unsigned N,
                                             unsigned K)
{
    matmul_shared(A, B, C, M, N, K);
}
extern "C" __global__ void __launch_bounds__(MATMUL_TX *MATMUL_TY, 2)
    matmul_tiled_f32(const float *A, const float *B, float *C, unsigned M, unsigned N, unsigned K)
{
    matmul_tiled<float, MATMUL_TX, MATMUL_TY, MATMUL_BK>(A, B, C, M, N, K);
}
extern "C" __global__ void __launch_bounds__(MATMUL_TX *MATMUL_TY, 2)
    matmul_tiled_f64(const double *A, const double *B, double *C, unsigned M, unsigned N, unsigned K)
{
    matmul_tiled<double, MATMUL_TX, MATMUL_TY, MATMUL_BK>(A, B, C, M, N, K);
}

GPUWS_CUDA_KERNELS(matmul, GPUWS_CUDA_KERNEL(matmul_naive_f32), GPUWS_CUDA_KERNEL(matmul_naive_f64),
                   GPUWS_CUDA_KERNEL(matmul_shared_f32), GPUWS_CUDA_KERNEL(matmul_shared_f64),
                   GPUWS_CUDA_KERNEL(matmul_tiled_f32), GPUWS_CUDA_KERNEL(matmul_tiled_f64))
