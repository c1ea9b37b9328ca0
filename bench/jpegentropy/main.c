// jpegentropy: how fast JPEG files decode on N threads: libjpeg-turbo's
// entropy decoding alone (coef: jpeg_read_coefficients, what a route that
// ran the inverse DCT on the GPU would leave the CPU), its whole decode to
// RGB / grey (full), or the server's own entropy decoding,
// codec/jpegcoef.c (ours; every file's coefficients and quantisation
// tables are first checked to be libjpeg-turbo's, and any difference
// fails the run). Each thread cycles
// through the files for the given seconds; prints images a second over all
// threads. docs/perf.md compares them with nvJPEG's decoupled route.
//
// Build (after `make pic-libs`):
//   gcc -O2 -static -I build/pic/include -o jpegentropy bench/jpegentropy/main.c codec/jpegcoef*.c build/pic/lib/libturbojpeg.a -lpthread
// Run: jpegentropy coef|full|ours THREADS SECONDS FILE...
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jpeglib.h>

#include "../../codec/jpegcoef.h"

struct file {
	unsigned char *data;
	unsigned long size;
};

static struct file *files;
static int nfiles;
static enum { COEF, FULL, OURS } mode;
static atomic_int stop;

struct jerr {
	struct jpeg_error_mgr pub;
	jmp_buf jump;
};

static void on_error(j_common_ptr c) { longjmp(((struct jerr *)c->err)->jump, 1); }

// ours is one thread's buffers for codec/jpegcoef.c.
struct ours {
	sl_coef_state *st;
	sl_coef_frame f;
	int16_t *coef;
	uint64_t *nz;
	int64_t cap;
};

// decode_ours decodes f's coefficients into o's buffers, grown to fit.
static int decode_ours(const struct file *f, struct ours *o) {
	if (!o->st && !(o->st = calloc(1, sl_coef_state_size())))
		return -1;
	if (sl_coef_frame_of(f->data, f->size, &o->f))
		return -1;
	if (o->f.blocks > o->cap) {
		free(o->coef);
		free(o->nz);
		o->cap = o->f.blocks;
		o->coef = malloc(o->cap * 64 * sizeof *o->coef);
		o->nz = malloc(o->cap * sizeof *o->nz);
		if (!o->coef || !o->nz)
			return -1;
	}
	return sl_coef_decode(o->st, f->data, f->size, 500, &o->f, o->coef, o->nz, o->cap, 0) ? -1 : 0;
}

static void free_ours(struct ours *o) {
	free(o->st);
	free(o->coef);
	free(o->nz);
	memset(o, 0, sizeof *o);
}

// decode runs one file through the mode's decoder; buf grows to hold a
// whole image.
static int decode(const struct file *f, struct ours *o, unsigned char **buf, size_t *cap) {
	if (mode == OURS)
		return decode_ours(f, o);
	struct jpeg_decompress_struct c;
	struct jerr e;
	c.err = jpeg_std_error(&e.pub);
	e.pub.error_exit = on_error;
	if (setjmp(e.jump)) {
		jpeg_destroy_decompress(&c);
		return -1;
	}
	jpeg_create_decompress(&c);
	jpeg_mem_src(&c, f->data, f->size);
	jpeg_read_header(&c, TRUE);
	if (mode == COEF) {
		jpeg_read_coefficients(&c);
	} else {
		c.out_color_space = c.num_components == 1 ? JCS_GRAYSCALE : JCS_RGB;
		jpeg_start_decompress(&c);
		size_t row = (size_t)c.output_width * c.output_components;
		if (row * c.output_height > *cap) {
			*cap = row * c.output_height;
			*buf = realloc(*buf, *cap);
		}
		while (c.output_scanline < c.output_height) {
			JSAMPROW r = *buf + row * c.output_scanline;
			jpeg_read_scanlines(&c, &r, 1);
		}
	}
	jpeg_abort_decompress(&c);
	jpeg_destroy_decompress(&c);
	return 0;
}

// same reports whether codec/jpegcoef.c gives f libjpeg-turbo's
// coefficients and quantisation tables.
static int same(const struct file *f) {
	struct jpeg_decompress_struct c;
	struct jerr e;
	struct ours o = {0};
	int ok = 1;
	c.err = jpeg_std_error(&e.pub);
	e.pub.error_exit = on_error;
	if (setjmp(e.jump)) {
		jpeg_destroy_decompress(&c);
		free_ours(&o);
		return 0;
	}
	jpeg_create_decompress(&c);
	jpeg_mem_src(&c, f->data, f->size);
	jpeg_read_header(&c, TRUE);
	jvirt_barray_ptr *arr = jpeg_read_coefficients(&c);
	if (decode_ours(f, &o) || o.f.nc != c.num_components)
		ok = 0;
	for (int i = 0; ok && i < c.num_components; i++) {
		jpeg_component_info *ci = &c.comp_info[i];
		const sl_coef_comp *oc = &o.f.c[i];
		if ((int)ci->width_in_blocks != oc->bw || (int)ci->height_in_blocks != oc->bh || !ci->quant_table) {
			ok = 0;
			break;
		}
		for (int k = 0; k < 64; k++)
			ok &= ci->quant_table->quantval[k] == oc->quant[k];
		for (JDIMENSION by = 0; ok && by < ci->height_in_blocks; by++) {
			JBLOCKARRAY row = (*c.mem->access_virt_barray)((j_common_ptr)&c, arr[i], by, 1, FALSE);
			for (JDIMENSION bx = 0; ok && bx < ci->width_in_blocks; bx++)
				ok = !memcmp(row[0][bx], o.coef + (oc->first + (int64_t)by * oc->pw + bx) * 64, sizeof(JBLOCK));
		}
	}
	free_ours(&o);
	jpeg_destroy_decompress(&c);
	return ok;
}

struct worker {
	pthread_t thread;
	int first;
	long done, failed;
};

static void *run(void *arg) {
	struct worker *w = arg;
	unsigned char *buf = NULL;
	size_t cap = 0;
	struct ours o = {0};
	for (int i = w->first; !stop; i = (i + 1) % nfiles) {
		if (decode(&files[i], &o, &buf, &cap) != 0)
			w->failed++;
		w->done++;
	}
	free(buf);
	free_ours(&o);
	return NULL;
}

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
	if (argc < 5 || (strcmp(argv[1], "coef") && strcmp(argv[1], "full") && strcmp(argv[1], "ours"))) {
		fprintf(stderr, "usage: jpegentropy coef|full|ours THREADS SECONDS FILE...\n");
		return 2;
	}
	mode = !strcmp(argv[1], "coef") ? COEF : !strcmp(argv[1], "full") ? FULL : OURS;
	int threads = atoi(argv[2]);
	double secs = atof(argv[3]);
	if (threads < 1 || threads > 1024 || !(secs > 0)) {
		fprintf(stderr, "jpegentropy: THREADS 1..1024 and SECONDS > 0\n");
		return 2;
	}
	nfiles = argc - 4;
	files = calloc(nfiles, sizeof *files);
	for (int i = 0; i < nfiles; i++) {
		FILE *fp = fopen(argv[4 + i], "rb");
		if (!fp || fseek(fp, 0, SEEK_END) != 0) {
			fprintf(stderr, "jpegentropy: cannot read %s\n", argv[4 + i]);
			return 1;
		}
		files[i].size = ftell(fp);
		rewind(fp);
		files[i].data = malloc(files[i].size);
		if (fread(files[i].data, 1, files[i].size, fp) != files[i].size) {
			fprintf(stderr, "jpegentropy: short read of %s\n", argv[4 + i]);
			return 1;
		}
		fclose(fp);
		if (mode == OURS && !same(&files[i])) {
			fprintf(stderr, "jpegentropy: %s: codec/jpegcoef.c's coefficients are not libjpeg-turbo's\n", argv[4 + i]);
			return 1;
		}
	}
	struct worker *ws = calloc(threads, sizeof *ws);
	double t0 = now();
	for (int i = 0; i < threads; i++) {
		ws[i].first = i % nfiles;
		pthread_create(&ws[i].thread, NULL, run, &ws[i]);
	}
	struct timespec d = {(time_t)secs, (long)((secs - (time_t)secs) * 1e9)};
	nanosleep(&d, NULL);
	stop = 1;
	long done = 0, failed = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(ws[i].thread, NULL);
		done += ws[i].done;
		failed += ws[i].failed;
	}
	double el = now() - t0;
	printf("%s: %d files, %d threads: %.0f img/s (%.0f us an image a thread)%s\n", argv[1], nfiles, threads,
	       done / el, el * threads / done * 1e6, failed ? " (some failed)" : "");
	return failed ? 1 : 0;
}
