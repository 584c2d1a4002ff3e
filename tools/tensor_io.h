/*
 * Tensor files for the axle tool: NumPy .npy (read and write) and 8-bit
 * binary PGM (P5) / PPM (P6) images (read), converted to what a model input
 * expects.
 *
 * Every function returns 0 on success and -1 on failure with a one-line
 * reason in err (which names the file). Tensors returned are new references
 * the caller releases with axle_tensor_release().
 */
#ifndef AXLE_TOOLS_TENSOR_IO_H_
#define AXLE_TOOLS_TENSOR_IO_H_

#include <stddef.h>
#include <stdint.h>

#include <axle/axle.h>

#define TIO_ERR_SIZE 512

/* How image pixels (0..255) become tensor values. */
typedef struct tio_image_options_t {
  /* Float inputs get pixel * scale (default 1/255, so [0,1]). Integer inputs
   * with per-tensor quantization get the quantized value of pixel * scale;
   * integer inputs without quantization get the raw pixel. */
  double scale;
  int invert; /* use 255 - pixel (black digit on white -> white on black) */
} tio_image_options_t;

#define TIO_IMAGE_OPTIONS_DEFAULT {1.0 / 255.0, 0}

/* Raw 8-bit image, interleaved (HWC) as stored in the file. */
typedef struct tio_image_t {
  uint32_t width, height, channels; /* channels: 1 (PGM) or 3 (PPM) */
  uint8_t* pixels;                  /* malloc'ed, width*height*channels */
} tio_image_t;

/* File kinds recognised by extension (case-insensitive). */
typedef enum tio_kind_t { TIO_KIND_UNKNOWN, TIO_KIND_NPY, TIO_KIND_PGM, TIO_KIND_PPM } tio_kind_t;
tio_kind_t tio_kind_from_path(const char* path);

/* .npy: versions 1.0/2.0/3.0 headers, little-endian or byte-sized dtypes,
 * C order. dtypes f2 f4 f8 u1 i1 u2 i2 u4 i4 u8 i8 b1. */
int tio_read_npy(const char* path, axle_tensor_t** out, char* err, size_t err_size);
/* Writes a version 1.0 header (2.0 when it would not fit). bfloat16, which
 * NumPy lacks, is written as float32. */
int tio_write_npy(const char* path, axle_tensor_t* tensor, char* err, size_t err_size);

/* P5 / P6 with maxval <= 255 (comments allowed in the header). */
int tio_read_pnm(const char* path, tio_image_t* out, char* err, size_t err_size);
void tio_image_free(tio_image_t* image);

/* Loads any supported file for a model input described by want (from
 * axle_model_input_info: dtype, rank, shape with dims < 0 symbolic):
 *  - .npy: values are cast to want's dtype; the shape must match want's
 *    (symbolic dims take the file's) or, when want is fully concrete, hold
 *    the same number of elements (then it is reshaped).
 *  - .pgm/.ppm: laid out as NCHW, NHWC, CHW, HWC or HW to fit want (grey is
 *    repeated for 3-channel inputs, colour turned to luma for 1-channel ones)
 *    and converted per img (NULL = defaults).
 * want NULL keeps the file's own dtype and shape (images: uint8 [1,C,H,W]). */
int tio_load_for_input(const char* path, const axle_tensor_info_t* want,
                       const tio_image_options_t* img, axle_tensor_t** out, char* err,
                       size_t err_size);

/* Element i of a tensor's data as double, for any numeric dtype
 * (STRING/UNDEFINED read as 0). */
double tio_get(const void* data, axle_dtype_t dtype, size_t i);
/* Stores v (rounded and saturated for integer types) as element i. */
void tio_set(void* data, axle_dtype_t dtype, size_t i, double v);
/* Whether tio_get/tio_set handle dtype. */
int tio_dtype_is_numeric(axle_dtype_t dtype);
int tio_dtype_is_float(axle_dtype_t dtype);

/* "[1, 3, ?, 224]" ('?' for symbolic dimensions). */
void tio_format_shape(char* buf, size_t size, uint32_t rank, const int64_t* shape);

#endif /* AXLE_TOOLS_TENSOR_IO_H_ */
