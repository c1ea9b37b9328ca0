// SL_HIDDEN marks the C functions of package codec: only its Go code calls
// them, so the backend library does not export them.
#ifndef SLUICE_HIDDEN_H
#define SLUICE_HIDDEN_H

#define SL_HIDDEN __attribute__((visibility("hidden")))

#endif
