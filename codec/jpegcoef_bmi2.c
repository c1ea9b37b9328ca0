// jpegcoef.c again, compiled for CPUs with BMI2: sl_coef_decode calls it
// where the CPU has it.
#if defined(__x86_64__) || defined(__i386__)
#pragma GCC target("bmi2")
#define SL_COEF_BMI2
#include "jpegcoef.c"
#endif
