#include "axle/axle.h"

int axle_version_number(void) { return AXLE_VERSION_NUMBER; }
const char* axle_version_string(void) { return AXLE_VERSION_STRING; }
