/* minatar_draws.h: a MinAtar game (MA_GAME 1..5: breakout, freeway, asterix, space_invaders, seaquest)
 * whose random draws come from a buffer the test fills with the `minatar` package's own draws
 * (tests/native/test_minatar_oracle.py), through minatar_common.h's MA_UNIFORM / MA_RANDINT hook:
 * the rules are compared, not the generators. One process-wide buffer: step one env at a time. */
#include "fastvec.h"

#define MA_TEST_CAPACITY 4096
static double ma_test_draws[MA_TEST_CAPACITY];
static int ma_test_len, ma_test_pos, ma_test_short; /* short: a draw was asked beyond the buffer */

static double ma_test_draw(void) {
    if (ma_test_pos >= ma_test_len) {
        ma_test_short += 1;
        return 0.0;
    }
    return ma_test_draws[ma_test_pos++];
}

/* Replace the buffer with n draws (uniforms as they are, integers as values in [0, n)). */
__attribute__((visibility("default"))) void ma_test_feed(const double* draws, int n) {
    for (int k = 0; k < n && k < MA_TEST_CAPACITY; k++) ma_test_draws[k] = draws[k];
    ma_test_len = n;
    ma_test_pos = 0;
    ma_test_short = 0;
}

/* Draws left unused since the last feed, or -1 if more were asked than fed. */
__attribute__((visibility("default"))) int ma_test_left(void) {
    return ma_test_short ? -1 : ma_test_len - ma_test_pos;
}

#define MA_UNIFORM(rng) ((void)(rng), ma_test_draw())
#define MA_RANDINT(rng, n) ((void)(rng), (int)ma_test_draw())

#if MA_GAME == 1
#include "minatar_breakout.h"
#elif MA_GAME == 2
#include "minatar_freeway.h"
#elif MA_GAME == 3
#include "minatar_asterix.h"
#elif MA_GAME == 4
#include "minatar_space_invaders.h"
#elif MA_GAME == 5
#include "minatar_seaquest.h"
#else
#error "MA_GAME is 1 (breakout), 2 (freeway), 3 (asterix), 4 (space_invaders) or 5 (seaquest)"
#endif
