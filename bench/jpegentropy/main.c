// jpegentropy: how fast libjpeg-turbo decodes JPEG files on N threads,
// entropy decoding alone (jpeg_read_coefficients: what a route that ran
// the inverse DCT on the GPU would leave the CPU) or the whole decode to
// RGB / grey. Each thread cycles through the files for the given seconds;
// prints images a second over all threads. docs/perf.md compares it with
// nvJPEG's decoupled route on the same cores.
//
// Build (after `make pic-libs`):
//   gcc -O2 -static -I build/pic/include -o jpegentropy bench/jpegentropy/main.c build/pic/lib/libturbojpeg.a -lpthread
// Run: jpegentropy coef|full THREADS SECONDS FILE...
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jpeglib.h>

struct file {
	unsigned char *data;
	unsigned long size;
};

static struct file *files;
static int nfiles, whole;
static volatile int stop;

struct jerr {
	struct jpeg_error_mgr pub;
	jmp_buf jump;
};

static void on_error(j_common_ptr c) { longjmp(((struct jerr *)c->err)->jump, 1); }

// decode runs one file through libjpeg; buf grows to hold a whole image.
static int decode(const struct file *f, unsigned char **buf, size_t *cap) {
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
	if (!whole) {
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

struct worker {
	pthread_t thread;
	int first;
	long done, failed;
};

static void *run(void *arg) {
	struct worker *w = arg;
	unsigned char *buf = NULL;
	size_t cap = 0;
	for (int i = w->first; !stop; i = (i + 1) % nfiles) {
		if (decode(&files[i], &buf, &cap) != 0)
			w->failed++;
		w->done++;
	}
	free(buf);
	return NULL;
}

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
	if (argc < 5 || (strcmp(argv[1], "coef") && strcmp(argv[1], "full"))) {
		fprintf(stderr, "usage: jpegentropy coef|full THREADS SECONDS FILE...\n");
		return 2;
	}
	whole = strcmp(argv[1], "full") == 0;
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
