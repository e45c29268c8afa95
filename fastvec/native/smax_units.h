/* smax_units.h: the units of smax.h's random-unit scenarios (jaxmarl's smacv2_*_units, its distributions.py in its
 * float32 arithmetic), drawn at every reset, for teams of equal size. Types: each ally's uniform among the six, the
 * enemy of the same index the ally's type. Start positions, surrounded or reflected with even odds:
 *   surrounded: one team (either with even odds) inside, at the map's centre plus a uniform offset in [-2, 2)^2
 *     each; the other outside, each unit in one of four groups (uniformly), a group on the line from a map corner
 *     ((0, 0), (0, 32), (32, 0), (32, 32) in order) to the centre at a uniform fraction t of the way, plus the
 *     unit's own offset in [-2, 2)^2 (so a unit may start off the map: the first world step's walls kill it);
 *   reflected: the allies uniform over the left half [0, 16) x [0, 32), each enemy its ally mirrored in x = 16.
 * The draws (SmaxSpawn) are kept apart from what is made of them (smax_place_units), so jaxmarl's draws for a key
 * place the units as its reset does (tests/smax). Included by smax.h, which defines the team sizes.
 */
#if NUM_ALLIES != NUM_ENEMIES
#error "smax_units.h draws units for teams of equal size, as jaxmarl's smacv2 scenarios are"
#endif

#define SMAX_GROUPS 4

/* One reset's draws (jaxmarl's random variates in their units); a branch's fields are unused by the other. */
typedef struct {
    int surrounded;                 /* 1: surrounded; 0: reflected */
    int allies_inside;              /* surrounded: 1 the allies inside, 0 the enemies */
    float inside[NUM_ALLIES][2];    /* surrounded: the inside units' offsets from the centre, in [-2, 2) */
    int group[NUM_ALLIES];          /* surrounded: the outside units' groups, in [0, 4) */
    float along[SMAX_GROUPS];       /* surrounded: each group's t, in [0, 1) */
    float outside[NUM_ALLIES][2];   /* surrounded: the outside units' offsets from their group, in [-2, 2) */
    float reflected[NUM_ALLIES][2]; /* reflected: the allies' positions, in [0, 16) x [0, 32) */
    int type[NUM_ALLIES];           /* each ally's type, in [0, 6) */
} SmaxSpawn;

FV_FN void smax_draw_spawn(SmaxSpawn* d, fv_rng* rng) {
    d->surrounded = fv_rand_int(rng, 2);
    d->allies_inside = fv_rand_int(rng, 2);
    for (int i = 0; i < NUM_ALLIES; i++) {
        if (d->surrounded) {
            for (int k = 0; k < 2; k++) d->inside[i][k] = fv_rand_uniform(rng, -2.0f, 2.0f);
            for (int k = 0; k < 2; k++) d->outside[i][k] = fv_rand_uniform(rng, -2.0f, 2.0f);
            d->group[i] = fv_rand_int(rng, SMAX_GROUPS);
        } else {
            d->reflected[i][0] = fv_rand_uniform(rng, 0.0f, SMAX_MAP_SIZE / 2.0f);
            d->reflected[i][1] = fv_rand_uniform(rng, 0.0f, SMAX_MAP_SIZE);
        }
        d->type[i] = fv_rand_int(rng, SMAX_TYPE_BITS);
    }
    for (int g = 0; g < SMAX_GROUPS; g++) d->along[g] = d->surrounded ? fv_rand_float(rng) : 0.0f;
}

/* Every unit's start position and type from the draws, before the units are pushed apart. */
FV_FN void smax_place_units(const SmaxSpawn* d, float (*pos)[2], unsigned char* type) {
    const float centre = SMAX_MAP_SIZE / 2.0f;
    for (int i = 0; i < NUM_ALLIES; i++) {
        type[i] = type[NUM_ALLIES + i] = (unsigned char)d->type[i];
        if (!d->surrounded) {
            pos[i][0] = d->reflected[i][0], pos[i][1] = d->reflected[i][1];
            pos[NUM_ALLIES + i][0] = SMAX_MAP_SIZE - d->reflected[i][0], pos[NUM_ALLIES + i][1] = d->reflected[i][1];
            continue;
        }
        float* in = pos[d->allies_inside ? i : NUM_ALLIES + i];
        float* out = pos[d->allies_inside ? NUM_ALLIES + i : i];
        int g = d->group[i];
        float t = d->along[g], corner[2] = {g < 2 ? 0.0f : SMAX_MAP_SIZE, g % 2 ? SMAX_MAP_SIZE : 0.0f};
        for (int k = 0; k < 2; k++) {
            in[k] = centre + d->inside[i][k];
            out[k] = (t * centre + (1.0f - t) * corner[k]) + d->outside[i][k];
        }
    }
}
