// sluice_huffman: Huffman (entropy) decoding of sequential JPEGs of one
// scan on the GPU's SMs, into the coefficient layout codec.CoefDecoder
// writes (blocks of 64 int16s in natural order, quantised, each component's
// blocks row-major over whole MCUs from its first block), so that
// sluice_idct and sluice_ycc then decode them exactly as the CPU's
// coefficient route does.
//
// A JPEG's entropy-coded data has no symbol boundaries a thread could start
// from, but Huffman codes synchronise themselves: a decoder started at an
// arbitrary bit soon falls onto the true symbol boundaries (Weissenberger
// and Schmidt, "Massively Parallel Huffman Decoding on GPUs", ICPP 2018;
// for JPEG, where the state also holds the block of the MCU and the
// coefficient, "Accelerating JPEG Decompression on GPUs", HiPC 2021). One
// thread block takes one image: its data (unstuffed on the host, each
// restart interval a segment of its own, since an interval starts from a
// known state) is cut into subsequences of equal bits, one a thread.
//
//   1. Rounds until nothing changes: a thread decodes its subsequence from
//      the state recorded at its start (a guess at first: the first block
//      of an MCU at the subsequence's first bit) to the first symbol
//      boundary past its end, and records the state it reaches there as
//      the next subsequence's start. A segment's first state is exact, so
//      once a round changes nothing every recorded state is the true one;
//      a thread decodes again only when its start changed, so after the
//      first round or two few threads work.
//   2. Scans over each segment's subsequences of the blocks each started
//      and of its DC differences per component: each subsequence's first
//      block's index and its DC predictors (DC prediction is a prefix sum
//      of differences, reset at each restart).
//   3. Every thread decodes its subsequence once more from its true state,
//      writing its coefficients: a block in a per-thread scratch block of
//      shared memory, copied out whole; a block split between two
//      threads, coefficient by coefficient, each thread writing the
//      positions its symbols code (zeros of runs and end-of-block
//      included), so that no block is cleared beforehand and no two
//      threads write one coefficient.
//
// The same code compiles as C (kernels/huffman_emu.go runs it on the CPU,
// the threads of a block in loops, each phase after the one before, as the
// barriers order them), which is how its results are checked against
// codec.CoefDecoder's without a GPU. Included by fused.cu.

#ifndef SLUICE_HUFFMAN_CUH
#define SLUICE_HUFFMAN_CUH

#ifdef __CUDACC__
#define HUFF_FN __device__ __forceinline__
#define HUFF_ASSERT(c, m) static_assert(c, m)
#define HUFF_LD(x) __ldg(&(x))
#define HUFF_CONST __constant__
#else
#include <string.h>
#define HUFF_FN static inline
#define HUFF_ASSERT(c, m) _Static_assert(c, m)
#define HUFF_LD(x) (x)
#define HUFF_CONST static const
#endif

#define HUFF_FAST 9        // bits of the lookup tables
#define HUFF_THREADS 256   // threads of a block: one image
#define HUFF_MAX_UNITS 10  // blocks an MCU (the standard's limit)
#define HUFF_MAX_SUBS 32768 // subsequences an image, so that a round fits the state's stamp

// Results per image (status): 0, or one of these; above the low byte, the
// synchronisation rounds the image took.
#define HUFF_BAD_DATA 1   // a code no table has, a DC size over 15, an AC run past the block
#define HUFF_OVERFLOW 2   // a DC predictor outside int (libjpeg-turbo refuses it too)
#define HUFF_SHORT 3      // a restart interval (or the scan) needs bits past its data
#define HUFF_INTERNAL 4   // the synchronised states disagree with the block count

// One Huffman table, built by the host as codec's jpegcoef.c builds it.
// Mirrored by kernels.huffTable.
typedef struct sluice_huff_table {
    unsigned short fast[1 << HUFF_FAST];  // (code length << 8) | symbol; 0: a longer code
    short fastac[1 << HUFF_FAST];         // (value << 8) | (run << 4) | (code + value bits); 0: not this way
    int maxcode[17];                      // [l]: the largest code of length l; -1: none
    int mincode[17];                      // [l]: the first code of length l
    int valptr[17];                       // [l]: the index of its symbol in vals
    unsigned char vals[256];
} sluice_huff_table;

// One image. Mirrored by kernels.huffImage.
typedef struct sluice_huff_image {
    unsigned long long coef;  // device pointer: its coefficient blocks, CoefDecoder's layout
    unsigned int data;        // byte offset of its unstuffed data (4-aligned) from the launch's data
    unsigned int seg0, nseg;  // its segments (restart intervals), from seg0 of the launch's
    unsigned int sub0, nsub;  // its subsequences, from sub0
    unsigned int subbits;     // bits a subsequence
    int units;                // blocks an MCU
    int mcux;                 // MCUs a row
    int first[4];             // per component (frame order): its first block
    int pitch[4];             // blocks a stored row
    unsigned int dct[4], act[4];  // DC and AC tables, of the launch's (images share them)
    unsigned char h[4], v[4];     // sampling factors
    unsigned char ucomp[12], ux[12], uy[12];  // per block of an MCU: its component, column and row in the MCU
    // period: the fewest blocks after which the MCU's tables repeat (1
    // when all its components share their tables: a greyscale JPEG, or
    // one whose encoder used one pair). Synchronising compares a block's
    // place in the MCU only modulo the period: two decoders in step on the
    // bits at blocks of the same tables stay in step for good, and the
    // true place follows from the count of blocks before.
    unsigned char period;
    unsigned char pad[3];
} sluice_huff_image;

// One restart interval of an image (the whole scan without restarts).
// Mirrored by kernels.huffSeg.
typedef struct sluice_huff_seg {
    unsigned int start, end;  // its bits, from the image's data
    unsigned int mcu0, mcus;  // its first MCU, and how many it codes
    unsigned int sub0;        // its first subsequence, from the image's
    unsigned int pad;
} sluice_huff_seg;

// One subsequence's state, in device memory the launch provides (the
// kernel initialises it). Mirrored by kernels.huffSub's size.
typedef struct sluice_huff_sub {
    // The state at its first symbol boundary (huff_pack): bit, block of
    // the MCU, coefficient, and the round that wrote it. One 64-bit word,
    // so that a thread reading it while its neighbour writes it sees the
    // old or the new state, never half of each.
    unsigned long long st;
    int from;   // the round of the state it was last decoded from
    int n;      // blocks it starts; after the scan, the index of its first block (the segment's count)
    // DC differences of the blocks it starts, by their index modulo the
    // MCU's blocks (whose component the scan then knows); after the scan,
    // dc[0..3] are the predictors at its start, per component.
    int dc[HUFF_MAX_UNITS];
    int pad[2];
} sluice_huff_sub;

// The launch's arguments, by value. Mirrored by kernels.huffParams.
typedef struct sluice_huff_params {
    unsigned long long images;  // n sluice_huff_image
    unsigned long long segs;    // sluice_huff_seg
    unsigned long long subseg;  // per subsequence: its segment, from its image's seg0 (unsigned int)
    unsigned long long tables;  // sluice_huff_table
    unsigned long long data;    // the images' unstuffed data
    unsigned long long subs;    // sluice_huff_sub scratch, one a subsequence
    unsigned long long status;  // int per image: 0 or HUFF_*
    int n, pad;
} sluice_huff_params;

HUFF_ASSERT(sizeof(sluice_huff_table) == 2508, "sluice_huff_table size");
HUFF_ASSERT(sizeof(sluice_huff_image) == 152, "sluice_huff_image size");
HUFF_ASSERT(sizeof(sluice_huff_seg) == 24, "sluice_huff_seg size");
HUFF_ASSERT(sizeof(sluice_huff_sub) == 64, "sluice_huff_sub size");
HUFF_ASSERT(sizeof(sluice_huff_params) == 64, "sluice_huff_params size");

// zigzag position -> natural order
HUFF_CONST unsigned char huff_natural[64] = {
    0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,  12, 19, 26, 33, 40, 48,
    41, 34, 27, 20, 13, 6,  7,  14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23,
    30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63};

// What a block's threads share: shared memory on the GPU.
// The scan's (phase 2) values a thread: its subsequences' sums, then the
// sums up to them (segmented: a segment's first subsequence starts
// afresh, flag marks a thread's values that hold one).
typedef struct huff_scanbuf {
    long long val[HUFF_THREADS][4];
    long long tmp[HUFF_THREADS][4];
    int flag[HUFF_THREADS], tflag[HUFF_THREADS];
} huff_scanbuf;

typedef struct huff_shared {
    union {
        short scratch[HUFF_THREADS][64];  // phase 3: a block a thread (first: 16-byte aligned)
        huff_scanbuf scan;                // phase 2
    } w;
    // huff_natural again: threads at different coefficients read different
    // entries, which constant memory would serialise.
    unsigned char natural[64];
    int err;   // the image's first error seen (any, if several)
    int done;  // segments whose last block was decoded within their data
} huff_shared;

// huff_fail records an error of the image (threads may race to; any of
// their errors will do).
HUFF_FN void huff_fail(huff_shared* sh, int err) {
#ifdef __CUDACC__
    atomicExch(&sh->err, err);
#else
    sh->err = err;
#endif
}

// One image's view of the launch.
typedef struct huff_ctx {
    const sluice_huff_image* im;
    const sluice_huff_seg* segs;
    const unsigned int* subseg;
    const sluice_huff_table* tables;
    const unsigned char* data;
    sluice_huff_sub* subs;
    int* status;
} huff_ctx;

HUFF_FN huff_ctx huff_context(const sluice_huff_params* p, int img) {
    huff_ctx c;
    c.im = (const sluice_huff_image*)p->images + img;
    c.segs = (const sluice_huff_seg*)p->segs + c.im->seg0;
    c.subseg = (const unsigned int*)p->subseg + c.im->sub0;
    c.tables = (const sluice_huff_table*)p->tables;
    c.data = (const unsigned char*)p->data + c.im->data;
    c.subs = (sluice_huff_sub*)p->subs + c.im->sub0;
    c.status = (int*)p->status + img;
    return c;
}

// The state word: bit p, block u of the MCU (modulo the period),
// coefficient z (0: the DC next), stamp: the round that wrote it.
HUFF_FN unsigned long long huff_pack(unsigned int p, int u, int z, int stamp) {
    return (unsigned long long)p | (unsigned long long)(unsigned)u << 32 | (unsigned long long)(unsigned)z << 40 |
           (unsigned long long)(unsigned)stamp << 48;
}
#define HUFF_STATE(st) ((st) & 0xFFFFFFFFFFFFULL)
#define HUFF_STAMP(st) ((int)((st) >> 48))

#ifdef __CUDACC__
HUFF_FN unsigned long long huff_load_state(const sluice_huff_sub* s) { return *(volatile const unsigned long long*)&s->st; }
HUFF_FN void huff_store_state(sluice_huff_sub* s, unsigned long long v) { *(volatile unsigned long long*)&s->st = v; }
HUFF_FN unsigned int huff_word(const unsigned char* d, unsigned int w) {
    return __byte_perm(__ldg((const unsigned int*)d + w), 0, 0x0123);
}
#else
HUFF_FN unsigned long long huff_load_state(const sluice_huff_sub* s) { return s->st; }
HUFF_FN void huff_store_state(sluice_huff_sub* s, unsigned long long v) { s->st = v; }
HUFF_FN unsigned int huff_word(const unsigned char* d, unsigned int w) {
    unsigned int x;
    memcpy(&x, d + 4 * (size_t)w, 4);
    return __builtin_bswap32(x);
}
#endif

// The bit reader: buf holds nb valid bits from its top; w is the next
// 32-bit word. The data are unstuffed, so that a bit's position is the
// same for every thread that reads it.
typedef struct huff_bits {
    const unsigned char* data;
    unsigned long long buf;
    int nb;
    unsigned int w;
} huff_bits;

HUFF_FN void huff_refill(huff_bits* b) {
    if (b->nb <= 32) {
        b->buf |= (unsigned long long)huff_word(b->data, b->w++) << (32 - b->nb);
        b->nb += 32;
    }
}

HUFF_FN void huff_seek(huff_bits* b, unsigned int p) {
    b->w = p >> 5;
    b->buf = ((unsigned long long)huff_word(b->data, b->w++) << 32) << (p & 31);
    b->nb = 32 - (int)(p & 31);
    huff_refill(b);
}

HUFF_FN unsigned int huff_pos(const huff_bits* b) { return b->w * 32u - (unsigned)b->nb; }

HUFF_FN void huff_skip(huff_bits* b, int n) {
    b->buf <<= n;
    b->nb -= n;
}

// huff_get takes n (1..16) bits; the buffer holds them (one refill a
// symbol leaves at least 33).
HUFF_FN int huff_get(huff_bits* b, int n) {
    const int v = (int)(b->buf >> (64 - n));
    huff_skip(b, n);
    return v;
}

HUFF_FN int huff_extend(int v, int n) { return v < (1 << (n - 1)) ? v - (1 << n) + 1 : v; }

// huff_symbol decodes one symbol (jpegcoef.c's symbol): -1 for a code the
// table lacks.
HUFF_FN int huff_symbol(huff_bits* b, const sluice_huff_table* h) {
    const int f = HUFF_LD(h->fast[b->buf >> (64 - HUFF_FAST)]);
    if (f) {
        huff_skip(b, f >> 8);
        return f & 255;
    }
    int l = HUFF_FAST + 1, code = (int)(b->buf >> (64 - l));
    while (code > HUFF_LD(h->maxcode[l])) {
        if (++l > 16) {
            return -1;
        }
        code = (int)(b->buf >> (64 - l));
    }
    const int mc = HUFF_LD(h->mincode[l]);
    if (code < mc) {
        return -1;
    }
    huff_skip(b, l);
    return HUFF_LD(h->vals[HUFF_LD(h->valptr[l]) + code - mc]);
}

// What one decode of a subsequence takes and gives.
typedef struct huff_run {
    // in
    unsigned int p, end;  // start bit; decode up to the first symbol boundary at or past end
    int u, z;             // the state at p (count: u modulo the period)
    int write;            // 0: count; 1: write coefficients (phase 3)
    int cur, quota;       // write: the index of the block at p; the segment's end in blocks
    unsigned int segend;  // write: the segment's last bit
    int pred[4];          // write: DC predictors at p
    short* scratch;       // write: this thread's scratch block
    const unsigned char* natural;  // write: zigzag -> natural order
    // out
    int n;       // count: blocks started
    int dc[HUFF_MAX_UNITS];  // count: DC differences by block started, modulo the MCU's blocks
    int err;     // write: HUFF_* or 0
    int done;    // write: 1 when the segment's last block ended here within its data
} huff_run;

HUFF_FN short* huff_block(const sluice_huff_image* im, int cur, int u) {
    const int m = cur / im->units;
    const int my = m / im->mcux, mx = m - my * im->mcux;
    const int c = im->ucomp[u];
    const long long at = (long long)im->first[c] + ((long long)my * im->v[c] + im->uy[u]) * im->pitch[c] +
                         (long long)mx * im->h[c] + im->ux[u];
    return (short*)im->coef + at * 64;
}

HUFF_FN void huff_zero_block(short* s) {
#ifdef __CUDACC__
    uint4* q = (uint4*)s;
    const uint4 z = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int i = 0; i < 8; i++) {
        q[i] = z;
    }
#else
    memset(s, 0, 64 * sizeof *s);
#endif
}

HUFF_FN void huff_copy_block(short* dst, const short* s) {
#ifdef __CUDACC__
    uint4* d = (uint4*)dst;
    const uint4* q = (const uint4*)s;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        d[i] = q[i];
    }
#else
    memcpy(dst, s, 64 * sizeof *s);
#endif
}

// huff_flush writes zigzag positions lo..hi-1 of the scratch block to
// blk: all of them at once when the thread owns the whole block.
HUFF_FN void huff_flush(short* blk, const short* s, const unsigned char* nat, int lo, int hi) {
    if (lo == 0 && hi == 64) {
        huff_copy_block(blk, s);
        return;
    }
    for (int z = lo; z < hi; z++) {
        const int k = nat[z];
        blk[k] = s[k];
    }
}

// huff_decode decodes from r->p (state r->u, r->z) symbol by symbol until
// a symbol boundary at or past r->end, leaving the state there in r. In
// count mode it never fails: on a path that is not yet the true one a code
// no table has, or a value out of range, moves on deterministically (the
// true path's decode in write mode reports it); in write mode it stops at
// the first such error, and at the segment's last block.
HUFF_FN void huff_decode(const huff_ctx* x, huff_run* r) {
    const sluice_huff_image* im = x->im;
    const int units = im->units, write = r->write;
    const int wrap = write ? units : im->period;  // count mode knows u modulo the period
    huff_bits b;
    b.data = x->data;
    huff_seek(&b, r->p);
    int u = r->u, z = r->z;
    int c = im->ucomp[u];
    const sluice_huff_table* dct = x->tables + im->dct[c];
    const sluice_huff_table* act = x->tables + im->act[c];
    short* blk = 0;
    short* s = r->scratch;
    int lo = z, cur = r->cur, slot = 0;
    r->n = 0;
    for (int i = 0; i < HUFF_MAX_UNITS; i++) {
        r->dc[i] = 0;
    }
    if (write) {
        huff_zero_block(s);
        blk = huff_block(im, cur, u);
    }
    while (huff_pos(&b) < r->end) {
        huff_refill(&b);
        if (z == 0) {
            int t = huff_symbol(&b, dct);
            if (t < 0 || t > 15) {
                if (write) {
                    r->err = HUFF_BAD_DATA;
                    return;
                }
                if (t < 0) {
                    huff_skip(&b, 1);
                    t = 0;
                }
                t &= 15;
            }
            const int diff = t ? huff_extend(huff_get(&b, t), t) : 0;
            r->n++;
            if (write) {
                const long long pv = (long long)r->pred[c] + diff;
                if (pv > 2147483647LL || pv < -2147483647LL - 1) {
                    r->err = HUFF_OVERFLOW;
                    return;
                }
                r->pred[c] = (int)pv;
                s[0] = (short)(unsigned short)(unsigned)pv;  // libjpeg's value, truncated as its JCOEF
            } else {
                r->dc[slot] += diff;
                if (++slot == units) {
                    slot = 0;
                }
            }
            z = 1;
        } else {
            const int f = HUFF_LD(act->fastac[b.buf >> (64 - HUFF_FAST)]);
            int v;
            if (f) {
                huff_skip(&b, f & 15);
                z += (f >> 4) & 15;
                v = f >> 8;
            } else {
                const int rs = huff_symbol(&b, act);
                if (rs < 0) {
                    if (write) {
                        r->err = HUFF_BAD_DATA;
                        return;
                    }
                    huff_skip(&b, 1);
                    z = 64;  // as an end of block
                    v = 0;
                } else if ((rs & 15) == 0) {
                    z = (rs >> 4) == 15 ? z + 16 : 64;  // ZRL; else an end of block (any run)
                    v = 0;
                } else {
                    z += rs >> 4;
                    v = huff_extend(huff_get(&b, rs & 15), rs & 15);
                }
            }
            if (v) {
                if (z > 63) {
                    if (write) {
                        r->err = HUFF_BAD_DATA;  // libjpeg would write past the band
                        return;
                    }
                    z = 64;
                } else {
                    if (write) {
                        s[r->natural[z]] = (short)v;
                    }
                    z++;
                }
            }
        }
        if (z > 63) {  // the block ends (a ZRL past 63 ends it too, as in jpegcoef.c)
            if (write) {
                huff_flush(blk, s, r->natural, lo, 64);
                if (++cur == r->quota) {
                    r->done = huff_pos(&b) <= r->segend;
                    if (!r->done) {
                        r->err = HUFF_SHORT;
                    }
                    return;
                }
            }
            z = 0;
            if (++u == wrap) {
                u = 0;
            }
            c = im->ucomp[u];
            dct = x->tables + im->dct[c];
            act = x->tables + im->act[c];
            if (write) {
                huff_zero_block(s);
                blk = huff_block(im, cur, u);
                lo = 0;
            }
        }
    }
    if (write && z > 0) {
        huff_flush(blk, s, r->natural, lo, z);  // the rest of the block is the next thread's
    }
    r->p = huff_pos(&b);
    r->u = u;
    r->z = z;
}

// The start bit and end bit of subsequence k.
HUFF_FN void huff_span(const huff_ctx* x, int k, const sluice_huff_seg** sg, unsigned int* start, unsigned int* end) {
    const sluice_huff_seg* g = x->segs + HUFF_LD(x->subseg[k]);
    const unsigned int sb = x->im->subbits;
    *start = g->start + (unsigned)(k - (int)g->sub0) * sb;
    *end = g->end - *start > sb ? *start + sb : g->end;
    *sg = g;
}

// Phase 0: every subsequence's guess: an MCU's first block at its first
// bit; a segment's first subsequence's is exact.
HUFF_FN void huff_init(const huff_ctx* x, huff_shared* sh, int tid, int nt) {
    if (tid == 0) {
        sh->err = 0;
        sh->done = 0;
    }
    for (int i = tid; i < 64; i += nt) {
        sh->natural[i] = huff_natural[i];
    }
    for (int k = tid; k < (int)x->im->nsub; k += nt) {
        const sluice_huff_seg* g;
        unsigned int start, end;
        huff_span(x, k, &g, &start, &end);
        sluice_huff_sub* s = x->subs + k;
        huff_store_state(s, huff_pack(start, 0, 0, 0));
        s->from = -1;
    }
}

// Phase 1, round rd: each thread decodes the subsequences whose start
// changed since it last decoded them, and records the state each reaches
// as the next one's start. It reports whether it changed any.
HUFF_FN int huff_round(const huff_ctx* x, int rd, int tid, int nt) {
    int wrote = 0;
    const int nsub = (int)x->im->nsub;
    for (int k = tid; k < nsub; k += nt) {
        sluice_huff_sub* s = x->subs + k;
        const unsigned long long st = huff_load_state(s);
        if (HUFF_STAMP(st) == s->from) {
            continue;
        }
        s->from = HUFF_STAMP(st);
        const sluice_huff_seg* g;
        unsigned int start, end;
        huff_span(x, k, &g, &start, &end);
        huff_run r;
        r.p = (unsigned int)st;
        r.u = (int)(st >> 32) & 255;
        r.z = (int)(st >> 40) & 255;
        r.end = end;
        r.write = 0;
        r.scratch = 0;
        r.natural = 0;
        huff_decode(x, &r);
        s->n = r.n;
        for (int i = 0; i < HUFF_MAX_UNITS; i++) {
            s->dc[i] = r.dc[i];
        }
        if (k + 1 < nsub && HUFF_LD(x->subseg[k + 1]) == HUFF_LD(x->subseg[k])) {
            const unsigned long long next = huff_pack(r.p, r.u, r.z, rd);
            if (HUFF_STATE(huff_load_state(s + 1)) != HUFF_STATE(next)) {
                huff_store_state(s + 1, next);
                wrote = 1;
            }
        }
    }
    return wrote;
}

// Phase 2: per segment, each subsequence's first block and its DC
// predictors: two scans over the subsequences, each thread taking a run of
// them (a reduction of its own, a scan of the threads' sums in shared
// memory, then its run again with the sum before it). The first finds
// each subsequence's first block from the blocks each starts; the
// second, knowing then the component of each block a subsequence starts,
// its DC predictors. A predictor out of int fails the image (where the
// block is the segment's, not data past its end).

// huff_chunk is thread tid's run of subsequences.
HUFF_FN void huff_chunk(const huff_ctx* x, int tid, int nt, int* lo, int* hi) {
    const int nsub = (int)x->im->nsub, c = (nsub + nt - 1) / nt;
    *lo = tid * c < nsub ? tid * c : nsub;
    *hi = *lo + c < nsub ? *lo + c : nsub;
}

// huff_dc_add adds the DC differences of the blocks subsequence s starts
// to v, by component: its j-th block (modulo the MCU's) is block s->n + j.
HUFF_FN void huff_dc_add(const huff_ctx* x, const sluice_huff_sub* s, long long v[4]) {
    const int units = x->im->units, u0 = s->n % units;
    for (int j = 0; j < units; j++) {
        const int u = u0 + j < units ? u0 + j : u0 + j - units;
        v[x->im->ucomp[u]] += s->dc[j];
    }
}

// Phase 2a: the blocks of a thread's run, from its last segment start.
HUFF_FN void huff_scan_up_n(const huff_ctx* x, huff_shared* sh, int tid, int nt) {
    int lo, hi, f = 0;
    huff_chunk(x, tid, nt, &lo, &hi);
    long long v = 0;
    for (int k = lo; k < hi; k++) {
        const sluice_huff_seg* g = x->segs + HUFF_LD(x->subseg[k]);
        if (k == (int)g->sub0) {
            f = 1;
            v = (long long)g->mcu0 * x->im->units;
        }
        v += x->subs[k].n;
    }
    sh->w.scan.val[tid][0] = v;
    sh->w.scan.flag[tid] = f;
}

// The scan of the threads' sums (Hillis and Steele's, segmented), step d
// in two halves with a barrier between: read the sums d threads before,
// then add them unless a segment starts in between.
HUFF_FN void huff_scan_read(huff_shared* sh, int tid, int d, int nv) {
    if (tid >= d) {
        for (int i = 0; i < nv; i++) {
            sh->w.scan.tmp[tid][i] = sh->w.scan.val[tid - d][i];
        }
        sh->w.scan.tflag[tid] = sh->w.scan.flag[tid - d];
    }
}

HUFF_FN void huff_scan_write(huff_shared* sh, int tid, int d, int nv) {
    if (tid >= d) {
        if (!sh->w.scan.flag[tid]) {
            for (int i = 0; i < nv; i++) {
                sh->w.scan.val[tid][i] += sh->w.scan.tmp[tid][i];
            }
        }
        sh->w.scan.flag[tid] |= sh->w.scan.tflag[tid];
    }
}

// Phase 2b: each subsequence's first block.
HUFF_FN void huff_scan_down_n(const huff_ctx* x, huff_shared* sh, int tid, int nt) {
    int lo, hi;
    huff_chunk(x, tid, nt, &lo, &hi);
    long long run = tid > 0 ? sh->w.scan.val[tid - 1][0] : 0;
    for (int k = lo; k < hi; k++) {
        const sluice_huff_seg* g = x->segs + HUFF_LD(x->subseg[k]);
        if (k == (int)g->sub0) {
            run = (long long)g->mcu0 * x->im->units;
        }
        sluice_huff_sub* s = x->subs + k;
        const int n = s->n;
        s->n = run < 2147483647LL ? (int)run : 2147483647;
        run += n;
    }
}

// Phase 2c: the DC differences of a thread's run by component, from its
// last segment start.
HUFF_FN void huff_scan_up_dc(const huff_ctx* x, huff_shared* sh, int tid, int nt) {
    int lo, hi, f = 0;
    huff_chunk(x, tid, nt, &lo, &hi);
    long long v[4] = {0, 0, 0, 0};
    for (int k = lo; k < hi; k++) {
        const sluice_huff_seg* g = x->segs + HUFF_LD(x->subseg[k]);
        if (k == (int)g->sub0) {
            f = 1;
            v[0] = v[1] = v[2] = v[3] = 0;
        }
        huff_dc_add(x, x->subs + k, v);
    }
    for (int i = 0; i < 4; i++) {
        sh->w.scan.val[tid][i] = v[i];
    }
    sh->w.scan.flag[tid] = f;
}

// Phase 2d: each subsequence's DC predictors.
HUFF_FN void huff_scan_down_dc(const huff_ctx* x, huff_shared* sh, int tid, int nt) {
    int lo, hi;
    huff_chunk(x, tid, nt, &lo, &hi);
    long long run[4] = {0, 0, 0, 0};
    if (tid > 0) {
        for (int i = 0; i < 4; i++) {
            run[i] = sh->w.scan.val[tid - 1][i];
        }
    }
    const int units = x->im->units;
    for (int k = lo; k < hi; k++) {
        const sluice_huff_seg* g = x->segs + HUFF_LD(x->subseg[k]);
        if (k == (int)g->sub0) {
            run[0] = run[1] = run[2] = run[3] = 0;
        }
        sluice_huff_sub* s = x->subs + k;
        long long add[4] = {0, 0, 0, 0};
        huff_dc_add(x, s, add);
        const long long quota = ((long long)g->mcu0 + g->mcus) * units;
        for (int i = 0; i < 4; i++) {
            if (s->n <= quota && (run[i] > 2147483647LL || run[i] < -2147483647LL - 1)) {
                huff_fail(sh, HUFF_OVERFLOW);
            }
            s->dc[i] = (int)run[i];
            run[i] += add[i];
        }
    }
}

// Phase 3: each subsequence decoded once more from its true state,
// writing its coefficients.
HUFF_FN void huff_write(const huff_ctx* x, huff_shared* sh, int tid, int nt) {
    const int nsub = (int)x->im->nsub, units = x->im->units;
    for (int k = tid; k < nsub; k += nt) {
        sluice_huff_sub* s = x->subs + k;
        const unsigned long long st = huff_load_state(s);
        const sluice_huff_seg* g;
        unsigned int start, end;
        huff_span(x, k, &g, &start, &end);
        huff_run r;
        r.p = (unsigned int)st;
        r.u = (int)(st >> 32) & 255;
        r.z = (int)(st >> 40) & 255;
        r.end = end;
        r.write = 1;
        r.cur = s->n - (r.z > 0);
        r.quota = (int)(g->mcu0 + g->mcus) * units;
        if (r.cur >= r.quota) {
            continue;  // past the segment's blocks: its padding or junk
        }
        if (r.cur < 0 || r.cur % units % x->im->period != r.u) {
            huff_fail(sh, HUFF_INTERNAL);
            continue;
        }
        r.u = r.cur % units;  // the true place, where the state knew it modulo the period
        r.segend = g->end;
        for (int i = 0; i < 4; i++) {
            r.pred[i] = s->dc[i];
        }
        r.scratch = sh->w.scratch[tid];
        r.natural = sh->natural;
        r.err = 0;
        r.done = 0;
        huff_decode(x, &r);
        if (r.err) {
            huff_fail(sh, r.err);
        }
        if (r.done) {
#ifdef __CUDACC__
            atomicAdd(&sh->done, 1);
#else
            sh->done++;
#endif
        }
    }
}

// Phase 4: the image's result, and the rounds it took.
HUFF_FN void huff_finish(const huff_ctx* x, const huff_shared* sh, int rounds) {
    *x->status = (sh->err ? sh->err : sh->done != (int)x->im->nseg ? HUFF_SHORT : 0) | rounds << 8;
}

#ifdef __CUDACC__
// huff_scan_tree scans the threads' sums of nv values.
__device__ void huff_scan_tree(huff_shared* sh, int tid, int nv) {
    for (int d = 1; d < HUFF_THREADS; d <<= 1) {
        huff_scan_read(sh, tid, d, nv);
        __syncthreads();
        huff_scan_write(sh, tid, d, nv);
        __syncthreads();
    }
}

// sluice_huffman: block b decodes image b of the launch.
extern "C" __global__ void __launch_bounds__(HUFF_THREADS) sluice_huffman(sluice_huff_params prm) {
    __shared__ __align__(16) huff_shared sh;
    const int tid = threadIdx.x;
    const huff_ctx x = huff_context(&prm, blockIdx.x);
    huff_init(&x, &sh, tid, HUFF_THREADS);
    __syncthreads();
    int rd = 1;
    for (;; rd++) {
        const int wrote = huff_round(&x, rd, tid, HUFF_THREADS);
        if (!__syncthreads_or(wrote)) {
            break;
        }
    }
    huff_scan_up_n(&x, &sh, tid, HUFF_THREADS);
    __syncthreads();
    huff_scan_tree(&sh, tid, 1);
    huff_scan_down_n(&x, &sh, tid, HUFF_THREADS);
    __syncthreads();
    huff_scan_up_dc(&x, &sh, tid, HUFF_THREADS);
    __syncthreads();
    huff_scan_tree(&sh, tid, 4);
    huff_scan_down_dc(&x, &sh, tid, HUFF_THREADS);
    __syncthreads();
    huff_write(&x, &sh, tid, HUFF_THREADS);
    __syncthreads();
    if (tid == 0) {
        huff_finish(&x, &sh, rd);
    }
}
#endif

#endif
