/* enec CUDA kernels: decode and encode format-v1 streams on an NVIDIA GPU.
 *
 * The C API allocates nothing and never synchronises the device: the caller passes device
 * buffers, a CUDA stream, and (for encoding) a scratch buffer sized by a query function. Every
 * enqueueing function returns after enqueueing; results (per-frame statuses, the encoded size)
 * land in caller-provided device memory and are valid once the caller synchronises the stream.
 *
 * Decoding is two steps:
 *   1. on the host, walk the frame headers of one or more streams (a host copy of the stream
 *      bytes is needed, or at least of its headers: see enec_cuda_index_stream) to build a frame
 *      index of enec_cuda_frame entries pointing into the device copies; upload it;
 *   2. one launch decodes every frame of the index (all tensors of a checkpoint shard at once).
 *
 * Device pointers to streams must be 16-byte aligned (cudaMalloc gives 256). Output pointers
 * may have any alignment (16-byte aligned ones take the vectorized path).
 */
#ifndef ENEC_CUDA_H
#define ENEC_CUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element types (the stream header's dtype code). */
#define ENEC_CUDA_BF16 1
#define ENEC_CUDA_FP16 2
#define ENEC_CUDA_FP32 3
#define ENEC_CUDA_E4M3 4 /* OCP float8 e4m3fn (format 1.1) */
#define ENEC_CUDA_E5M2 5 /* OCP float8 e5m2 (format 1.1) */

/* Codings the encoder may be asked for. */
#define ENEC_CUDA_AUTO 0
#define ENEC_CUDA_GROUPS 1
#define ENEC_CUDA_RANKED 2

/* Return codes (0 = success). */
#define ENEC_CUDA_OK 0
#define ENEC_CUDA_ERR_ARGUMENT -1     /* a null pointer, a bad option, a misaligned stream */
#define ENEC_CUDA_ERR_TRUNCATED -2    /* the host bytes end before the stream does */
#define ENEC_CUDA_ERR_MAGIC -3        /* not an enec stream */
#define ENEC_CUDA_ERR_VERSION -4      /* unsupported major version */
#define ENEC_CUDA_ERR_HEADER -5       /* stream header corrupt (check, reserved bytes, counts) */
#define ENEC_CUDA_ERR_FRAME -6        /* a frame header is corrupt (see *bad_frame) */
#define ENEC_CUDA_ERR_CAPACITY -7     /* the frame array or the output buffer is too small */
#define ENEC_CUDA_ERR_TRAILING -8     /* bytes after the last frame */
#define ENEC_CUDA_ERR_LAUNCH -9       /* the kernel launch failed (cudaGetLastError) */
#define ENEC_CUDA_ERR_CUDA -10        /* enec_cuda_load: a CUDA runtime call failed */
#define ENEC_CUDA_ERR_READ -11        /* enec_cuda_load: reading the source failed or ended early */
#define ENEC_CUDA_ERR_DECODE -12      /* enec_cuda_load: a frame failed to decode on the device */
#define ENEC_CUDA_ERR_CHECKSUM -13    /* enec_cuda_load: raw bytes differ from their checksum */

/* One frame of a decode batch (32 bytes). Built by enec_cuda_index_stream. */
typedef struct enec_cuda_frame {
  const void* src;      /* device address of the frame header */
  void* dst;            /* device address of the frame's decoded bytes */
  uint32_t frame_bytes; /* size of the frame, header included */
  uint32_t elements;    /* elements in the frame */
  uint32_t index;       /* frame number in its stream (for reports) */
  uint8_t dtype;        /* ENEC_CUDA_BF16 / FP16 / FP32 / E4M3 / E5M2 */
  uint8_t checksums;    /* the stream carries frame checksums */
  uint8_t coding;       /* 0 stored, 1 groups, 2 ranked */
  uint8_t reserved;
} enec_cuda_frame;

/* Running totals of a decode batch; zero-initialise, then pass to every index call. */
typedef struct enec_cuda_batch {
  uint32_t frames;          /* entries written to the frame array */
  uint32_t max_elements;    /* largest frame, in elements */
  uint32_t max_coded_bytes; /* largest non-stored frame, in bytes */
  uint32_t dtype_mask;      /* bit (1 << dtype) for every dtype in the batch */
  uint32_t max_entries;     /* largest escape-entry total (c2 + c3 + c4) of a ranked frame */
  uint32_t general_frames;  /* frames for the general kernel (groups, or a length that is not a
                               multiple of 1,024 up to 16,384); the rest take the column kernel */
  uint64_t decoded_bytes;   /* bytes the batch decodes to */
} enec_cuda_batch;

/* What a stream header says. */
typedef struct enec_cuda_stream_info {
  uint64_t element_count;
  uint64_t decoded_bytes;
  uint32_t frame_count;
  uint32_t frame_len;
  uint8_t dtype;
  uint8_t checksums;
  uint8_t version_major;
  uint8_t version_minor;
} enec_cuda_stream_info;

/* Reads and checks a stream header (32 host bytes). */
int enec_cuda_stream_info_read(const void* host_stream, size_t host_len, enec_cuda_stream_info* info);

/* Walks the frame headers of one stream in host memory (host_stream, host_len: the whole
 * stream) and appends one enec_cuda_frame per frame to frames[batch->frames ..], pointing into
 * dev_stream (the device copy of the same bytes) and dev_out (out_capacity bytes, where the
 * stream decodes to). Every header is checked as the Rust decoder checks it (ranges, reserved
 * bytes, sizes against the parameters, element counts). On ENEC_CUDA_ERR_FRAME, *bad_frame (if
 * not null) is the frame number. */
int enec_cuda_index_stream(const void* host_stream, size_t host_len, const void* dev_stream,
                           void* dev_out, size_t out_capacity, enec_cuda_frame* frames,
                           size_t frames_capacity, enec_cuda_batch* batch, uint32_t* bad_frame);

/* Appends frames of one stream from a piece of it in host memory: `host` holds host_len bytes
 * starting at the header of frame number first_frame (`info`: the stream's header, read with
 * enec_cuda_stream_info_read), `dev` the device copy of the same bytes (16-byte aligned) and
 * dev_out the memory the whole stream decodes to. Frames are indexed, and checked as by
 * enec_cuda_index_stream, while each lies wholly within host_len, the stream has frames left and
 * the frame array has room; *frames_done and *bytes_done say how far it got (fewer frames than
 * are left is no error: the caller brings the next bytes). On ENEC_CUDA_ERR_FRAME the faulty
 * frame is number first_frame + *frames_done; the frames before it are in the batch. */
int enec_cuda_index_frames(const enec_cuda_stream_info* info, uint32_t first_frame,
                           const void* host, size_t host_len, const void* dev, void* dev_out,
                           enec_cuda_frame* frames, size_t frames_capacity,
                           enec_cuda_batch* batch, uint32_t* frames_done, size_t* bytes_done);

/* Decodes every frame of a batch in one launch. d_frames: the frame array in device memory
 * (batch->frames entries). d_status: batch->frames uint32 in device memory; each gets 0 or the
 * frame's error (1 header, 2 size, 3 elements, 4 symbol table, 5 escape counts, 6 flag count,
 * 7 checksum mismatch, 8 checksum in a stream without checksums, 9 unknown coding).
 * verify_checksums: check each frame's h32 against its header (when the stream has them).
 * Output bytes of a frame whose status is not 0 are unspecified. */
int enec_cuda_decode(const enec_cuda_frame* d_frames, const enec_cuda_batch* batch,
                     int verify_checksums, uint32_t* d_status, void* stream /* cudaStream_t */);

/* The largest stream the encoder writes for element_count elements. */
uint64_t enec_cuda_max_encoded_bytes(int dtype, uint64_t element_count, int frame_log2);

/* Scratch bytes enec_cuda_encode needs (device memory, 8-byte aligned). */
uint64_t enec_cuda_encode_scratch_bytes(uint64_t element_count, int frame_log2);

/* Encodes element_count elements at d_in (16-byte aligned) into d_out (16-byte aligned,
 * out_capacity >= enec_cuda_max_encoded_bytes) with the options of FORMAT.md section 7; the
 * bytes equal the Rust encoder's. *d_out_bytes (device memory) receives the stream length.
 * The scratch is cleared with cudaMemsetAsync on `stream` before the launch. */
int enec_cuda_encode(const void* d_in, uint64_t element_count, int dtype, int frame_log2,
                     int coding, int checksums, void* d_out, uint64_t out_capacity,
                     uint64_t* d_out_bytes, void* d_scratch, uint64_t scratch_bytes,
                     void* stream /* cudaStream_t */);

/* Loading: whole streams (and verbatim pieces) read from a file or host memory into device memory.
 * Unlike the calls above, enec_cuda_load allocates (pinned host and device staging, freed before
 * it returns) and waits for the device: it returns when every stream is decoded and checked.
 * The source is read in slots of staging_bytes by `threads` threads into pinned memory, each slot
 * copied to the device and decoded there while the next one is read; a stream may span slots
 * (it is cut between frames). Checksums are verified on the device. */
#define ENEC_CUDA_JOB_STREAM 0 /* an enec stream, decoded on the device */
#define ENEC_CUDA_JOB_RAW 1    /* verbatim bytes with their h32, checked on the host and copied */

typedef struct enec_cuda_load_job {
  uint64_t offset;    /* where the stream (or raw piece) starts in the source */
  uint64_t length;    /* its length in bytes */
  void* dst;          /* device memory it decodes (or is copied) to */
  uint64_t dst_bytes; /* the size of dst: exactly the stream's decoded size (the raw length) */
  uint32_t kind;      /* ENEC_CUDA_JOB_STREAM or ENEC_CUDA_JOB_RAW */
  uint32_t checksum;  /* raw pieces: h32 of the bytes (FORMAT.md section 6); else unused */
} enec_cuda_load_job;

typedef struct enec_cuda_load_options {
  int device;               /* the CUDA device that holds every dst */
  int verify_checksums;     /* check each frame's h32 (when the stream has them) */
  uint32_t threads;         /* reading threads (0: 8) */
  uint32_t slots;           /* staging slots in flight (0: 4; at least 2) */
  uint64_t staging_bytes;   /* bytes per slot (0: 16 MiB; at least 1 MiB) */
} enec_cuda_load_options;

/* What enec_cuda_load did, and where it stopped on an error. */
typedef struct enec_cuda_load_report {
  uint64_t bytes_read;    /* source bytes read */
  uint64_t bytes_decoded; /* bytes written to device memory by decoded frames */
  uint32_t job;           /* the job at fault (any error about one stream) */
  uint32_t frame;         /* the frame at fault (ENEC_CUDA_ERR_FRAME, ENEC_CUDA_ERR_DECODE) */
  uint32_t status;        /* the frame's device status (ENEC_CUDA_ERR_DECODE; see enec_cuda_decode) */
  int cuda_error;         /* the cudaError_t (ENEC_CUDA_ERR_CUDA, ENEC_CUDA_ERR_LAUNCH) */
  int os_error;           /* errno of the failed read (ENEC_CUDA_ERR_READ; 0 if the source ended early) */
  uint32_t batches;       /* slots filled and decoded */
} enec_cuda_load_report;

/* Decodes n_jobs streams into device memory. Source: host memory at `host` if it is not null,
 * else the file descriptor fd (read with pread: its offset is unchanged). `options` may be null
 * (defaults, device 0, checksums verified). Returns 0 or an ENEC_CUDA_ERR_* code, with `report`
 * (may be null) filled either way. On an error, the contents of every dst are unspecified. */
int enec_cuda_load(int fd, const void* host, const enec_cuda_load_job* jobs, size_t n_jobs,
                   const enec_cuda_load_options* options, enec_cuda_load_report* report);

/* Whether the kernels of this build run on `device`: 0, or ENEC_CUDA_ERR_CUDA with *cuda_error
 * set (no device, a driver too old for this build, no kernel image for its architecture). */
int enec_cuda_check_device(int device, int* cuda_error);

/* The CUDA runtime's message for a cudaError_t (as in enec_cuda_load_report.cuda_error). */
const char* enec_cuda_error_string(int cuda_error);

#ifdef __cplusplus
}
#endif

#endif /* ENEC_CUDA_H */
