// nvJitLink test input (-dc, then archived): the device function jitlink_caller.cu calls.
extern "C" __device__ int twice(int x) { return 2 * x; }
