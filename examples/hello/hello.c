/* Smallest Axle program: load a model, place it on the CPU, run it once on
 * an all-zero image and print the scores.
 *
 *   axle_example_hello [MODEL]     (default examples/digits/digits.onnx)
 */
#include <stdio.h>

#include <axle/axle.h>

static int fail(axle_status_t status) {
  fprintf(stderr, "hello: %s: %s\n", axle_status_string(status), axle_status_message());
  return 1;
}

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : "examples/digits/digits.onnx";
  axle_runtime_t* runtime = NULL;
  axle_model_t* model = NULL;
  axle_session_t* session = NULL;
  axle_tensor_t* image = NULL;
  axle_tensor_t* scores = NULL;
  axle_status_t st;
  int rc = 1;

  /* Discovers plugins on AXLE_PLUGIN_PATH and next to libaxle. */
  if ((st = axle_runtime_create(NULL, &runtime)) != AXLE_OK) return fail(st);
  if ((st = axle_model_load_file(path, &model)) != AXLE_OK) {
    rc = fail(st);
    goto done;
  }
  const char* devices[] = {"cpu"};
  axle_session_options_t options = {
      .struct_size = sizeof options, .devices = devices, .device_count = 1};
  if ((st = axle_session_create(runtime, model, &options, &session)) != AXLE_OK) {
    rc = fail(st);
    goto done;
  }

  /* digits.onnx: "image" float32 [1,1,8,8] in, "scores" float32 [1,10] out. */
  const int64_t shape[4] = {1, 1, 8, 8};
  if ((st = axle_tensor_create(AXLE_DTYPE_F32, 4, shape, &image)) != AXLE_OK) {
    rc = fail(st);
    goto done;
  }
  const char* input_names[] = {"image"};
  const char* output_names[] = {"scores"};
  /* scores is NULL on entry, so the run allocates it and hands it to us. */
  st = axle_session_run(session, NULL, input_names, &image, 1, output_names, &scores, 1);
  if (st != AXLE_OK) {
    rc = fail(st);
    goto done;
  }

  const float* p = axle_tensor_data(scores);
  printf("scores:");
  for (int64_t i = 0; i < axle_tensor_element_count(scores); i++)
    printf(" %lld: %.4f", (long long)i, p[i]);
  printf("\n");
  rc = 0;

done:
  axle_tensor_release(scores);
  axle_tensor_release(image);
  axle_session_release(session);
  axle_model_release(model);
  axle_runtime_release(runtime);
  return rc;
}
