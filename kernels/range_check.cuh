// Whether every stored value lies where a float split's rounding bound holds
// (gbdist/algebra/rounding.py): 0, or lo <= |v| <= hi. Sets *flag to 1 on the first
// value outside that a thread finds (a write only when one is found: no contention).
extern "C" __global__ void gb_out_of_range_f32(const float* __restrict__ v, long long n, float lo,
                                               float hi, int* __restrict__ flag) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const float a = fabsf(v[i]);
    if (a != 0.0f && !(a >= lo && a <= hi)) {  // NaN too: outside
      *flag = 1;
      return;
    }
  }
}
