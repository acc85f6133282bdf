// A "HIP runtime" that exports only the start of the API: the backend must report the first
// required function it lacks (hipDeviceGetAttribute here) and not crash.
extern "C" {
int hipRuntimeGetVersion(int* version) {
  *version = 60200000;
  return 0;
}
const char* hipGetErrorString(int) { return "fake error"; }
int hipInit(unsigned) { return 0; }
int hipGetDeviceCount(int* count) {
  *count = 1;
  return 0;
}
}
