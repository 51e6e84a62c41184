/*
 * enec_file: compress and decompress a file of raw little-endian weights through the enec C ABI
 * (ffi/include/enec.h). The library never allocates; this program owns every buffer, including
 * the streaming codec's state.
 *
 *   enec_file compress   bf16|fp16|fp32 IN OUT   one-shot enec_encode
 *   enec_file decompress IN OUT                  streaming decoder, 64 KiB reads and writes
 *   enec_file roundtrip  bf16|fp16|fp32 IN       streaming encoder, one-shot decoder, compare
 *   enec_file tensors    CHECKPOINT.enec         list a container's tensors (name, dtype, shape)
 *   enec_file tensor     CHECKPOINT.enec NAME OUT  restore one tensor's bytes into OUT
 *   enec_file restore    CHECKPOINT.enec OUT       restore the whole file, every byte verified,
 *                                                  through a write callback into OUT
 *   enec_file verify     CHECKPOINT.enec           restore the whole file into memory, verified
 *
 * Build: make -C examples/c   (or see examples/c/Makefile)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "enec.h"

#define CHUNK (64 * 1024)

static int fail_status(const char *what, EnecStatus status) {
    fprintf(stderr, "enec_file: %s: %s\n", what, enec_status_message(status));
    return 1;
}

/* The detail's message says more than the status: which piece, which frame, which rule. */
static int fail_detail(const char *what, const EnecErrorDetail *detail) {
    fprintf(stderr, "enec_file: %s: %s\n", what, detail->message);
    return 1;
}

static unsigned char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(n > 0 ? (size_t)n : 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        perror(path);
        fclose(f);
        free(buf);
        return NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static int write_all(const char *path, const unsigned char *buf, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(buf, 1, len, f) != len) {
        perror(path);
        if (f) fclose(f);
        return 1;
    }
    return fclose(f) != 0;
}

static int parse_dtype(const char *name, uint32_t *dtype) {
    if (strcmp(name, "bf16") == 0) *dtype = ENEC_DTYPE_BF16;
    else if (strcmp(name, "fp16") == 0) *dtype = ENEC_DTYPE_FP16;
    else if (strcmp(name, "fp32") == 0) *dtype = ENEC_DTYPE_FP32;
    else {
        fprintf(stderr, "enec_file: unknown dtype %s (bf16, fp16 or fp32)\n", name);
        return 1;
    }
    return 0;
}

/* One-shot: size the output with enec_max_encoded_size, encode, write. */
static int compress(uint32_t dtype, const char *in, const char *out) {
    size_t len = 0, cap = 0, written = 0;
    unsigned char *input = read_all(in, &len);
    if (!input) return 1;
    EnecOptions options = enec_options_default(dtype);
    EnecStatus st = enec_max_encoded_size(&options, len, &cap);
    if (st != ENEC_STATUS_OK) return free(input), fail_status("max size", st);
    unsigned char *stream = malloc(cap);
    EnecErrorDetail detail;
    st = enec_encode(&options, input, len, stream, cap, &written, &detail);
    int rc = st != ENEC_STATUS_OK ? fail_status("encode", st) : write_all(out, stream, written);
    if (rc == 0) printf("%s: %zu -> %zu bytes (ratio %.4f)\n", in, len, written, written ? (double)len / written : 0.0);
    free(input);
    free(stream);
    return rc;
}

/* Streaming: the decoder's state lives in memory we provide, sized by the library. */
static int decompress(const char *in, const char *out) {
    FILE *fin = fopen(in, "rb"), *fout = fopen(out, "wb");
    if (!fin || !fout) {
        perror(!fin ? in : out);
        return 1;
    }
    /* Enough for every dtype with the default 16,384-element frames. */
    size_t state_len = enec_decoder_state_size(ENEC_DTYPE_FP32, 16384);
    void *state = aligned_alloc(ENEC_STATE_ALIGN, (state_len + ENEC_STATE_ALIGN - 1) / ENEC_STATE_ALIGN * ENEC_STATE_ALIGN);
    EnecDecoder *dec = NULL;
    EnecStatus st = enec_decoder_init(state, state_len, ENEC_DTYPE_FP32, 16384, &dec);
    if (st != ENEC_STATUS_OK) return fail_status("decoder init", st);
    static unsigned char inbuf[CHUNK], outbuf[CHUNK];
    size_t have = 0, at = 0, total_out = 0;
    int eof = 0, rc = 0;
    for (;;) {
        if (at == have && !eof) {
            have = fread(inbuf, 1, CHUNK, fin);
            at = 0;
            eof = have == 0;
        }
        EnecProgress p;
        st = enec_decoder_decode(dec, inbuf + at, have - at, outbuf, CHUNK, &p);
        if (st != ENEC_STATUS_OK) {
            rc = fail_status("decode", st);
            break;
        }
        at += p.consumed;
        if (p.written && fwrite(outbuf, 1, p.written, fout) != p.written) {
            perror(out);
            rc = 1;
            break;
        }
        total_out += p.written;
        if (p.status == ENEC_FLOW_STATUS_DONE) break;
        if (p.status == ENEC_FLOW_STATUS_NEEDS_INPUT && eof) break; /* finish() reports it */
    }
    if (rc == 0 && (st = enec_decoder_finish(dec)) != ENEC_STATUS_OK) rc = fail_status("finish", st);
    if (rc == 0) printf("%s: decoded %zu bytes\n", in, total_out);
    free(state);
    fclose(fin);
    if (fclose(fout) != 0) rc = 1;
    return rc;
}

/* Streaming encoder in odd-sized pieces, then the one-shot decoder, then compare. */
static int roundtrip(uint32_t dtype, const char *in) {
    size_t len = 0, cap = 0;
    unsigned char *input = read_all(in, &len);
    if (!input) return 1;
    EnecOptions options = enec_options_default(dtype);
    size_t eb = dtype == ENEC_DTYPE_FP32 ? 4 : 2;
    len -= len % eb;
    EnecStatus st = enec_max_encoded_size(&options, len, &cap);
    if (st != ENEC_STATUS_OK) return fail_status("max size", st);
    unsigned char *stream = malloc(cap), *restored = malloc(len ? len : 1);
    size_t state_len = enec_encoder_state_size(&options);
    void *state = aligned_alloc(ENEC_STATE_ALIGN, (state_len + ENEC_STATE_ALIGN - 1) / ENEC_STATE_ALIGN * ENEC_STATE_ALIGN);
    EnecEncoder *enc = NULL;
    st = enec_encoder_init(state, state_len, &options, len / eb, &enc);
    if (st != ENEC_STATUS_OK) return fail_status("encoder init", st);
    size_t in_at = 0, out_at = 0;
    for (;;) {
        size_t piece = len - in_at < 7777 ? len - in_at : 7777;
        size_t room = cap - out_at < 5000 ? cap - out_at : 5000;
        EnecProgress p;
        st = enec_encoder_encode(enc, input + in_at, piece, stream + out_at, room, &p);
        if (st != ENEC_STATUS_OK) return fail_status("stream encode", st);
        in_at += p.consumed;
        out_at += p.written;
        if (p.status == ENEC_FLOW_STATUS_DONE) break;
    }
    if ((st = enec_encoder_finish(enc)) != ENEC_STATUS_OK) return fail_status("encoder finish", st);
    /* The streamed stream is the one-shot stream. */
    size_t one_shot_len = 0, decoded = 0;
    unsigned char *one_shot = malloc(cap);
    st = enec_encode(&options, input, len, one_shot, cap, &one_shot_len, NULL);
    if (st != ENEC_STATUS_OK) return fail_status("encode", st);
    EnecStreamInfo info;
    if ((st = enec_read_header(stream, out_at, &info)) != ENEC_STATUS_OK) return fail_status("header", st);
    EnecErrorDetail detail;
    st = enec_decode(stream, out_at, restored, len, &decoded, &detail);
    if (st != ENEC_STATUS_OK) return fail_status("decode", st);
    int same = one_shot_len == out_at && memcmp(one_shot, stream, out_at) == 0;
    int equal = decoded == len && memcmp(restored, input, len) == 0;
    printf("%s: %llu elements, %u frames, %zu -> %zu bytes (ratio %.4f); streamed == one-shot: %s; "
           "restored: %s\n",
           in, (unsigned long long)info.element_count, info.frame_count, len, out_at,
           out_at ? (double)len / out_at : 0.0, same ? "yes" : "NO", equal ? "byte-identical" : "MISMATCH");
    free(input);
    free(stream);
    free(restored);
    free(one_shot);
    free(state);
    return same && equal ? 0 : 1;
}

/* Containers: the handle lives in our memory (a few dozen bytes plus 16 per tensor); the file
 * stays ours too. */
static EnecContainer *open_container(const char *path, unsigned char **file, void **state) {
    size_t len = 0, state_len = 0;
    *file = read_all(path, &len);
    if (!*file) return NULL;
    EnecErrorDetail detail;
    EnecContainer *c = NULL;
    *state = NULL;
    if (enec_container_state_size(*file, len, &state_len, &detail) == ENEC_STATUS_OK) {
        *state = aligned_alloc(ENEC_STATE_ALIGN, (state_len + ENEC_STATE_ALIGN - 1) / ENEC_STATE_ALIGN * ENEC_STATE_ALIGN);
        enec_container_open(*state, state_len, *file, len, &c, &detail);
    }
    if (!c) {
        fail_detail(path, &detail);
        free(*file);
        free(*state);
        return NULL;
    }
    return c;
}

static void print_tensor(const EnecTensorInfo *t) {
    printf("%llu\t%.*s\t%.*s\t[", (unsigned long long)t->index, (int)t->name_len, t->name,
           (int)t->dtype_name_len, t->dtype_name);
    for (uint32_t d = 0; d < t->rank; d++) printf(d ? ", %llu" : "%llu", (unsigned long long)t->shape[d]);
    printf("]\t%llu -> %llu bytes%s\n", (unsigned long long)t->bytes, (unsigned long long)t->stored_bytes,
           t->dtype ? "" : " (verbatim)");
}

static int tensors(const char *in) {
    unsigned char *file;
    void *state;
    EnecContainer *c = open_container(in, &file, &state);
    if (!c) return 1;
    uint64_t count = 0;
    enec_container_tensor_count(c, &count);
    for (uint64_t i = 0; i < count; i++) {
        EnecTensorInfo t;
        EnecStatus st = enec_container_tensor(c, i, &t);
        if (st != ENEC_STATUS_OK) return fail_status("tensor", st);
        print_tensor(&t);
    }
    free(file);
    free(state);
    return 0;
}

static int tensor(const char *in, const char *name, const char *out) {
    unsigned char *file;
    void *state;
    EnecContainer *c = open_container(in, &file, &state);
    if (!c) return 1;
    EnecTensorInfo t;
    EnecStatus st = enec_container_find(c, name, strlen(name), &t);
    if (st != ENEC_STATUS_OK) return fail_status(name, st);
    print_tensor(&t);
    unsigned char *bytes = malloc(t.bytes ? (size_t)t.bytes : 1);
    size_t written = 0;
    EnecErrorDetail detail;
    st = enec_container_decode_tensor(c, t.index, bytes, (size_t)t.bytes, &written, &detail);
    int rc = st != ENEC_STATUS_OK ? fail_detail(name, &detail) : write_all(out, bytes, written);
    free(bytes);
    free(file);
    free(state);
    return rc;
}

/* The write callback of enec_container_restore_to: it only ever gets verified bytes. */
static int write_file(void *ctx, const uint8_t *bytes, size_t len) {
    return fwrite(bytes, 1, len, (FILE *)ctx) == len ? 0 : -1;
}

/* Whole-file restore through a callback: a scratch buffer sized by the library, no output
 * buffer of the file's size. */
static int restore(const char *in, const char *out) {
    unsigned char *file;
    void *state;
    EnecContainer *c = open_container(in, &file, &state);
    if (!c) return 1;
    size_t scratch_len = 0;
    enec_container_scratch_size(c, &scratch_len);
    unsigned char *scratch = malloc(scratch_len ? scratch_len : 1);
    FILE *f = fopen(out, "wb");
    if (!f) {
        perror(out);
        return 1;
    }
    uint64_t written = 0;
    EnecErrorDetail detail;
    EnecStatus st = enec_container_restore_to(c, write_file, f, scratch, scratch_len, &written, &detail);
    int rc = st != ENEC_STATUS_OK ? fail_detail(in, &detail) : 0;
    if (fclose(f) != 0) rc = 1;
    if (rc != 0) remove(out); /* what was written is a verified prefix of a damaged file */
    else printf("%s: restored %llu bytes, every byte verified\n", in, (unsigned long long)written);
    free(scratch);
    free(file);
    free(state);
    return rc;
}

/* Whole-file restore into one buffer: query the size, restore, discard. */
static int verify(const char *in) {
    unsigned char *file;
    void *state;
    EnecContainer *c = open_container(in, &file, &state);
    if (!c) return 1;
    uint64_t size = 0;
    size_t scratch_len = 0, written = 0;
    enec_container_restored_size(c, &size);
    enec_container_scratch_size(c, &scratch_len);
    unsigned char *out = malloc(size ? (size_t)size : 1), *scratch = malloc(scratch_len ? scratch_len : 1);
    EnecErrorDetail detail;
    EnecStatus st = enec_container_restore(c, out, (size_t)size, scratch, scratch_len, &written, &detail);
    int rc = st != ENEC_STATUS_OK ? fail_detail(in, &detail) : 0;
    if (rc == 0) printf("%s: %zu bytes, intact\n", in, written);
    free(out);
    free(scratch);
    free(file);
    free(state);
    return rc;
}

int main(int argc, char **argv) {
    uint32_t dtype = 0;
    if (argc == 5 && strcmp(argv[1], "compress") == 0 && parse_dtype(argv[2], &dtype) == 0)
        return compress(dtype, argv[3], argv[4]);
    if (argc == 4 && strcmp(argv[1], "decompress") == 0) return decompress(argv[2], argv[3]);
    if (argc == 4 && strcmp(argv[1], "roundtrip") == 0 && parse_dtype(argv[2], &dtype) == 0)
        return roundtrip(dtype, argv[3]);
    if (argc == 3 && strcmp(argv[1], "tensors") == 0) return tensors(argv[2]);
    if (argc == 5 && strcmp(argv[1], "tensor") == 0) return tensor(argv[2], argv[3], argv[4]);
    if (argc == 4 && strcmp(argv[1], "restore") == 0) return restore(argv[2], argv[3]);
    if (argc == 3 && strcmp(argv[1], "verify") == 0) return verify(argv[2]);
    fprintf(stderr,
            "enec %s\nusage: enec_file compress bf16|fp16|fp32 IN OUT\n"
            "       enec_file decompress IN OUT\n"
            "       enec_file roundtrip bf16|fp16|fp32 IN\n"
            "       enec_file tensors CHECKPOINT.enec\n"
            "       enec_file tensor CHECKPOINT.enec NAME OUT\n"
            "       enec_file restore CHECKPOINT.enec OUT\n"
            "       enec_file verify CHECKPOINT.enec\n",
            enec_version());
    return 2;
}
