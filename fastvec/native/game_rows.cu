/* game_rows.cu: the multi-agent vector env's rows on the GPU (row = game * agents + agent, SuperSuit's
 * layout; fastvec/native/game_rows.py): a game's flags and episode facts copied to each of its seats' rows,
 * and one seat's actions, from any integer device array, into the batch's (games, agents) int64 actions.
 * Compiled alone (no env) through fastvec/native/gpu.py. */

extern "C" {

/* flags_out (3, G * A): terminated, truncated, done; length_out (G * A,); stats_out (S, G * A) from
 * ep_stats (G, S). */
__global__ void game_rows_kernel(int games, int agents, int stats, const bool* terminated, const bool* truncated,
                                 const bool* done, const int* length, const float* ep_stats, bool* flags_out,
                                 int* length_out, float* stats_out) {
    long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x, rows = (long long)games * agents;
    if (r >= rows) return;
    long long g = r / agents;
    flags_out[r] = terminated[g];
    flags_out[rows + r] = truncated[g];
    flags_out[2 * rows + r] = done[g];
    length_out[r] = length[g];
    for (int k = 0; k < stats; k++) stats_out[k * rows + r] = ep_stats[g * stats + k];
}

/* actions[g * agents + seat] = src[g] for src an integer array (itemsize 1, 2, 4 or 8 bytes, signed or not)
 * with a byte stride of src_stride between games. The env's step checks the values' range. */
__global__ void seat_actions_kernel(int games, int agents, int seat, const char* src, long long src_stride,
                                    int itemsize, int is_signed, long long* actions) {
    long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= games) return;
    const char* p = src + g * src_stride;
    long long v;
    if (itemsize == 8) v = *(const long long*)p;
    else if (itemsize == 4) v = is_signed ? (long long)*(const int*)p : (long long)*(const unsigned int*)p;
    else if (itemsize == 2) v = is_signed ? (long long)*(const short*)p : (long long)*(const unsigned short*)p;
    else v = is_signed ? (long long)*(const signed char*)p : (long long)*(const unsigned char*)p;
    actions[g * agents + seat] = v;
}

} /* extern "C" */
