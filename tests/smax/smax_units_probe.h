/* smax.h with one export more for tests/smax/test_smax_units.py: a battle's start placed from given draws (jaxmarl's,
 * or made up), as env_reset places it from its own: the positions placed (before the push apart), the state values
 * and observations of the start. */
#include "smax.h"

__attribute__((visibility("default"))) void smax_probe_start(int surrounded, int allies_inside, const float* inside,
                                                             const int* group, const float* along,
                                                             const float* outside, const float* reflected,
                                                             const int* type, float* placed, double* state,
                                                             float* obs) {
    SmaxSpawn d;
    d.surrounded = surrounded, d.allies_inside = allies_inside;
    for (int i = 0; i < NUM_ALLIES; i++) {
        for (int k = 0; k < 2; k++) {
            d.inside[i][k] = inside[2 * i + k], d.outside[i][k] = outside[2 * i + k];
            d.reflected[i][k] = reflected[2 * i + k];
        }
        d.group[i] = group[i], d.type[i] = type[i];
    }
    for (int g = 0; g < SMAX_GROUPS; g++) d.along[g] = along[g];
    State s;
    memset(&s, 0, sizeof s);
    smax_place_units(&d, s.pos, s.type);
    memcpy(placed, s.pos, sizeof s.pos);
    smax_start(&s);
    env_get_state(&s, state);
    smax_obs(&s, obs);
}
