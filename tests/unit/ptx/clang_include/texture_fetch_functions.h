// Empty: clang 19's CUDA wrapper includes this header, which CUDA 13 no longer ships. The test
// inputs compiled with clang use no texture fetch functions.
