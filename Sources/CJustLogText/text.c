// The function is static inline in the header; this file gives SwiftPM a source to build the target from.
#include "CJustLogText.h"
