/* A user program built against the installed Axle (CMake package or
 * pkg-config): prints the version and the devices the installed plugins
 * provide, then runs a model when one is given. */
#include <stdio.h>

#include <axle/axle.h>

int main(int argc, char** argv) {
  if (axle_version_number() != AXLE_VERSION_NUMBER) {
    fprintf(stderr, "header %d vs library %d\n", AXLE_VERSION_NUMBER, axle_version_number());
    return 1;
  }
  axle_runtime_t* rt = NULL;
  if (axle_runtime_create(NULL, &rt) != AXLE_OK) {
    fprintf(stderr, "runtime: %s\n", axle_status_message());
    return 1;
  }
  printf("axle %s devices:", axle_version_string());
  for (uint32_t i = 0; i < axle_runtime_device_count(rt); ++i) {
    axle_device_info_t info = {.struct_size = sizeof(info)};
    axle_runtime_device_info(rt, i, &info);
    printf(" %s", info.name);
  }
  printf("\n");
  int rc = 0;
  if (argc > 1) {
    axle_model_t* m = NULL;
    axle_session_t* s = NULL;
    if (axle_model_load_file(argv[1], &m) != AXLE_OK || axle_session_create(rt, m, NULL, &s) != AXLE_OK) {
      fprintf(stderr, "%s\n", axle_status_message());
      rc = 1;
    } else {
      printf("session ok: %u inputs\n", axle_session_input_count(s));
    }
    axle_session_release(s);
    axle_model_release(m);
  }
  axle_runtime_release(rt);
  return rc;
}
