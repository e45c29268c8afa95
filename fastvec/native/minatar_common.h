/* minatar_common.h: what the five MinAtar games (minatar_*.h, after the `minatar` package 1.0.15,
 * Young and Tian 2019) share: the 6-action alphabet and each game's minimal set, sticky actions,
 * the random draws, the (10, 10, C) uint8 observation, and the rgb_array palette.
 *
 * A game defines MA_CHANNELS, OBS_SIZE (10 * 10 * MA_CHANNELS), NUM_AGENTS, MA_MINIMAL_SET and
 * MA_PALETTE, then includes this file, then defines its State and rules and has MA_DEFINE_ENV (below)
 * write the contract's env_reset, env_step and env_render around them.
 * Parameters (-D, registered in fastvec/native/__init__.py):
 *   STICKY_ACTION_MILLI  probability, in thousandths, that the previous action repeats (minatar: 0.1)
 *   DIFFICULTY_RAMPING   1: the games speed up as minatar's ramping=True does (Breakout and Freeway have none)
 *   MINIMAL_ACTION_SET   1: Discrete(k) over the game's minimal set, as MinAtar/<Game>-v1; 0: all 6, as -v0
 * Random draws go through MA_UNIFORM(rng) (a double in [0, 1), numpy's rand()) and MA_RANDINT(rng, n)
 * (an int in [0, n), numpy's randint(n)), in the reference's order; a test harness may define both
 * before including a game to feed it the reference's own draws (tests/envs/minatar_draws.h).
 * Sticky actions as minatar's Environment.act: one uniform per step (none at probability 0), drawn
 * before the game's own, and the previous action (as a full-set id) replaces the chosen one below the
 * probability. The previous action is 0 at every reset (minatar keeps it across episodes; a seeded
 * reset must not depend on the episode before it).
 */
#ifndef FASTVEC_MINATAR_COMMON_H
#define FASTVEC_MINATAR_COMMON_H
#include "fastvec.h"

#ifndef STICKY_ACTION_MILLI
#define STICKY_ACTION_MILLI 100
#endif
#ifndef DIFFICULTY_RAMPING
#define DIFFICULTY_RAMPING 1
#endif
#ifndef MINIMAL_ACTION_SET
#define MINIMAL_ACTION_SET 1
#endif

#ifndef MA_UNIFORM
#define MA_UNIFORM(rng) fv_rand_double(rng)
#endif
#ifndef MA_RANDINT
#define MA_RANDINT(rng, n) fv_rand_int(rng, n)
#endif

/* minatar's action alphabet ['n', 'l', 'u', 'r', 'd', 'f']. */
#define MA_NOOP 0
#define MA_LEFT 1
#define MA_UP 2
#define MA_RIGHT 3
#define MA_DOWN 4
#define MA_FIRE 5

#if OBS_SIZE != 100 * MA_CHANNELS
#error "a MinAtar game defines MA_CHANNELS and OBS_SIZE = 10 * 10 * MA_CHANNELS before including minatar_common.h"
#endif
#define NUM_STATS 1
#define STAT_NAMES "score"
#define OBS_T unsigned char
#define OBS_SHAPE 10, 10, MA_CHANNELS
#define OBS_LOW 0
#define OBS_HIGH 1
#define MA_CELL 16 /* rgb_array pixels per grid cell */
#define RENDER_W (10 * MA_CELL)
#define RENDER_H (10 * MA_CELL)

/* The full-set id of agent action `a` (a game defines MA_MINIMAL_SET, its minimal set in minatar's
 * order), then minatar's sticky-action draw against the previous full-set id. */
FV_FN int ma_sticky_action(signed char* last_action, fv_rng* rng, long long a) {
    const signed char minimal[] = MA_MINIMAL_SET;
    int full = MINIMAL_ACTION_SET ? minimal[a] : (int)a;
#if STICKY_ACTION_MILLI > 0
    if (MA_UNIFORM(rng) < STICKY_ACTION_MILLI / 1000.0) full = *last_action;
#else
    (void)rng;
#endif
    *last_action = (signed char)full;
    return full;
}

/* Set channel c of cell (y, x) of an observation laid out (10, 10, MA_CHANNELS). */
#define MA_SET(obs, y, x, c) ((obs)[((y) * 10 + (x)) * MA_CHANNELS + (c)] = 1)

/* Zero an observation, in 4-byte words where it is aligned (every game's OBS_SIZE is a multiple of 4): a GPU
 * thread otherwise stores it a byte at a time, the bulk of a step's instructions for a 1,000-byte grid. */
FV_FN void ma_clear(unsigned char* obs) {
    if (OBS_SIZE % 4 == 0 && ((unsigned long long)(size_t)obs & 3) == 0) {
        unsigned int* words = (unsigned int*)(void*)obs;
        for (int k = 0; k < OBS_SIZE / 4; k++) words[k] = 0;
        return;
    }
    for (int k = 0; k < OBS_SIZE; k++) obs[k] = 0;
}

FV_FN int ma_lowest_bit(unsigned int v) {
#ifdef __CUDA_ARCH__
    return __ffs(v) - 1;
#else
    return __builtin_ctz(v);
#endif
}

/* Set channel c of row y at each set bit x of v (a row as a 10-bit mask). */
FV_FN void ma_set_row(unsigned char* obs, int y, unsigned int v, int c) {
    for (; v; v &= v - 1) MA_SET(obs, y, ma_lowest_bit(v), c);
}

/* Whole-row stores (CPU builds with AVX-512 BITALG, for games of up to 6 channels; with AVX2, for games of 4 to 6):
 * a row's 10 * MA_CHANNELS bytes in one or two stores, from a word that holds each channel's 10-bit mask of the row.
 * A game that keeps its objects as row masks (Space Invaders' aliens, Breakout's bricks) writes them without a loop
 * over set bits, whose exit a branch predictor misses in nearly every row: the count of set bits differs from env
 * to env. */
#if !defined(__CUDACC__) && MA_CHANNELS <= 6 && \
    ((defined(__AVX512BITALG__) && defined(__AVX512BW__)) || (defined(__AVX2__) && MA_CHANNELS >= 4))
#include <immintrin.h>
#define MA_ROW_STORES 1
/* Byte j of a row (cell j / MA_CHANNELS, channel j % MA_CHANNELS) takes bit 10 * channel + cell of the word;
 * bytes past the row take bit 63, which the word leaves 0. */
#define MA_PICK(j) ((j) < 10 * MA_CHANNELS ? (j) % MA_CHANNELS * 10 + (j) / MA_CHANNELS : 63)
#define MA_PICK8(j) MA_PICK(j), MA_PICK(j + 1), MA_PICK(j + 2), MA_PICK(j + 3), MA_PICK(j + 4), MA_PICK(j + 5), \
                    MA_PICK(j + 6), MA_PICK(j + 7)

#if defined(__AVX512BITALG__) && defined(__AVX512BW__)
/* Row y of the observation, whole: channel c of cell x is bit 10 * c + x of `cells`. */
FV_FN void ma_write_row(unsigned char* obs, int y, fv_u64 cells) {
    static const unsigned char pick[64] = {MA_PICK8(0), MA_PICK8(8), MA_PICK8(16), MA_PICK8(24),
                                           MA_PICK8(32), MA_PICK8(40), MA_PICK8(48), MA_PICK8(56)};
    __mmask64 bits = _mm512_bitshuffle_epi64_mask(_mm512_set1_epi64((long long)cells), _mm512_loadu_si512(pick));
    _mm512_mask_storeu_epi8(obs + y * 10 * MA_CHANNELS, (1ULL << (10 * MA_CHANNELS)) - 1,
                            _mm512_maskz_mov_epi8(bits, _mm512_set1_epi8(1)));
}
#else
/* The same with AVX2, which has no bit shuffle and no byte-masked store: each byte takes the word's byte that holds
 * its bit (a byte shuffle of the word in every lane) and tests that bit; the row's first 32 bytes go in one store
 * and the rest (8 to 28 bytes) through a copy of the constant length, so nothing past the row is written. */
#define MA_BYTE8(j) MA_PICK(j) >> 3, MA_PICK(j + 1) >> 3, MA_PICK(j + 2) >> 3, MA_PICK(j + 3) >> 3, \
                    MA_PICK(j + 4) >> 3, MA_PICK(j + 5) >> 3, MA_PICK(j + 6) >> 3, MA_PICK(j + 7) >> 3
#define MA_BIT8(j) 1 << (MA_PICK(j) & 7), 1 << (MA_PICK(j + 1) & 7), 1 << (MA_PICK(j + 2) & 7), \
                   1 << (MA_PICK(j + 3) & 7), 1 << (MA_PICK(j + 4) & 7), 1 << (MA_PICK(j + 5) & 7), \
                   1 << (MA_PICK(j + 6) & 7), 1 << (MA_PICK(j + 7) & 7)

FV_FN __m256i ma_row_bytes(__m256i word, const unsigned char* byte, const unsigned char* bit) {
    __m256i mask = _mm256_loadu_si256((const __m256i*)bit);
    __m256i picked = _mm256_and_si256(_mm256_shuffle_epi8(word, _mm256_loadu_si256((const __m256i*)byte)), mask);
    return _mm256_and_si256(_mm256_cmpeq_epi8(picked, mask), _mm256_set1_epi8(1));
}

/* Row y of the observation, whole: channel c of cell x is bit 10 * c + x of `cells`. */
FV_FN void ma_write_row(unsigned char* obs, int y, fv_u64 cells) {
    static const unsigned char byte[64] = {MA_BYTE8(0), MA_BYTE8(8), MA_BYTE8(16), MA_BYTE8(24),
                                           MA_BYTE8(32), MA_BYTE8(40), MA_BYTE8(48), MA_BYTE8(56)};
    static const unsigned char bit[64] = {MA_BIT8(0), MA_BIT8(8), MA_BIT8(16), MA_BIT8(24),
                                          MA_BIT8(32), MA_BIT8(40), MA_BIT8(48), MA_BIT8(56)};
    __m256i word = _mm256_set1_epi64x((long long)cells);
    unsigned char* row = obs + y * 10 * MA_CHANNELS;
    unsigned char rest[32];
    _mm256_storeu_si256((__m256i*)row, ma_row_bytes(word, byte, bit));
    _mm256_storeu_si256((__m256i*)rest, ma_row_bytes(word, byte + 32, bit + 32));
    memcpy(row + 32, rest, 10 * MA_CHANNELS - 32);
}
#endif
#else
#define MA_ROW_STORES 0
#endif

/* minatar's rgb_array: each cell takes the colour of its highest set channel in seaborn's cubehelix
 * palette of MA_CHANNELS colours (black where none is set), drawn as MA_CELL x MA_CELL pixels. */
FV_FN void ma_render(const unsigned char* obs, const unsigned char (*palette)[3], unsigned char* rgb) {
    for (int y = 0; y < 10; y++) {
        for (int x = 0; x < 10; x++) {
            int top = -1;
            for (int c = 0; c < MA_CHANNELS; c++)
                if (obs[(y * 10 + x) * MA_CHANNELS + c]) top = c;
            unsigned char r = top < 0 ? 0 : palette[top][0], g = top < 0 ? 0 : palette[top][1];
            unsigned char b = top < 0 ? 0 : palette[top][2];
            fv_fill_rect(rgb, RENDER_W, RENDER_H, x * MA_CELL, y * MA_CELL, (x + 1) * MA_CELL, (y + 1) * MA_CELL,
                         r, g, b);
        }
    }
}

/* ---------------------------------------------------------------- a game's env_reset, env_step, env_render
 * Every game's step opens and closes alike, as minatar's Environment.act around the game's own act:
 * the sticky action (its draw taken even once the game has ended), the game's rules unless the game
 * has ended (stepped past its end with autoreset off: nothing moves, reward 0, as in minatar), then
 * the score, the reward, the score statistic and the observation. MA_DEFINE_ENV(reset, rules, write_obs)
 * defines the contract's three functions from the game's parts:
 *   State: the game's, with `int score` and `signed char last_action, terminal` among its fields
 *   FV_FN void reset(State* s, fv_rng* rng)                   the game's start (score and the rest: here)
 *   FV_FN int rules(State* s, fv_rng* rng, int a, int* reward) one step for full-set action a: sets
 *                                                             *reward, returns 1 when the game ends
 *   FV_FN void write_obs(const State* s, unsigned char* obs)  the (10, 10, MA_CHANNELS) observation
 *   MA_PALETTE: the channels' rgb_array colours, {{r, g, b}, ...} (seaborn's cubehelix, as minatar) */
#define MA_DEFINE_ENV(reset, rules, write_obs)                                                              \
    FV_FN void env_reset(State* s, fv_rng* rng, unsigned char* obs) {                                       \
        State zero = {0}; /* all of it, lists past their counts too: a reset slot depends on its seed only */ \
        *s = zero;                                                                                          \
        reset(s, rng);                                                                                      \
        s->last_action = 0;                                                                                 \
        s->terminal = 0;                                                                                    \
        s->score = 0;                                                                                       \
        write_obs(s, obs);                                                                                  \
    }                                                                                                       \
    FV_FN int env_step(State* s, fv_rng* rng, const long long* actions, unsigned char* obs, float* rewards, \
                       float* stats) {                                                                      \
        int a = ma_sticky_action(&s->last_action, rng, actions[0]);                                         \
        int r = 0, terminal = 1;                                                                            \
        if (!s->terminal) {                                                                                 \
            terminal = rules(s, rng, a, &r);                                                                \
            s->terminal = (signed char)terminal;                                                            \
            s->score += r;                                                                                  \
        }                                                                                                   \
        rewards[0] = (float)r;                                                                              \
        stats[0] = (float)s->score;                                                                         \
        write_obs(s, obs);                                                                                  \
        return terminal;                                                                                    \
    }                                                                                                       \
    FV_FN void env_render(const State* s, unsigned char* rgb) {                                             \
        const unsigned char palette[MA_CHANNELS][3] = MA_PALETTE;                                           \
        unsigned char obs[OBS_SIZE];                                                                        \
        write_obs(s, obs);                                                                                  \
        ma_render(obs, palette, rgb);                                                                       \
    }

#endif /* FASTVEC_MINATAR_COMMON_H */
