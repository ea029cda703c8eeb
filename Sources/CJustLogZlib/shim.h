// The system zlib (Debian: zlib1g-dev; in the SDK on Apple platforms), for Lumberjack v2 `2C` frames.
#include <zlib.h>
