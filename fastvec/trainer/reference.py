"""The bundled trainer's algorithm written once as plain NumPy math, with explicit forward and backward
passes: policy (encoder, MinGRU or MLP layers, decoder), sampling, GAE / V-trace, the PPO loss; the action
heads (heads.py), running normalisation (normalize.py), the optimizer (optimizers.py: clipping, Adam, Muon,
schedules), the counter-based random streams (streams.py) and the prioritised choice of training sequences
(priority.py) are imported here as part of it. The fused CUDA trainer implements these same functions as kernels.

Legend for shape comments: T = time steps, B = rows of a batch (env x agent), O = observation size,
H = hidden size, L = layers, A = number of actions, P = total parameter count, D = action dimensions,
Y = the action head's width (spec.dist_size: A logits, sum(nvec) logits, or D means then D log-stds),
I = the actor's input (spec.input_size: O, then the agent-id one-hot), C = a world-state critic's input.
Every function works in the dtype of its inputs (float32 for training, float64 in the gradient tests).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

# The action heads' math is part of this reference (ref.sample_actions, ref.head_log_prob, ...).
from fastvec.trainer.heads import (  # noqa: F401
    ACTION_KINDS,
    action_log_prob,
    gaussian_from_uniforms,
    head_grad,
    head_log_prob,
    head_mode,
    log_softmax,
    sample_actions,
    sample_head,
    uniforms_per_row,
)
from fastvec.trainer.normalize import merge_moments, scale_rewards, update_obs_norm  # noqa: F401
from fastvec.trainer.optimizers import (  # noqa: F401
    NS_COEFFS,
    adam_step,
    annealed,
    clip_grad_norm,
    ent_coef_at,
    muon_step,
    muon_update_scale,
    newton_schulz,
)
from fastvec.trainer.streams import (  # noqa: F401
    MASK64,
    _mix64,
    head_uniforms,
    policy_uniforms,
    sampling_key,
    sequence_order,
    shuffle_key,
    splitmix64,
)
from fastvec.trainer.priority import prio_beta, prioritized_draws  # noqa: F401

# ----------------------------------------------------------------------------------------------
# POLICY: spec, flat parameter layout, initialisation

OBS_NORM_EPS, OBS_NORM_CLIP = 1e-8, 10.0  # as Gymnasium's NormalizeObservation with CleanRL's clip to [-10, 10]


@dataclasses.dataclass(frozen=True)
class PolicySpec:
    """The architecture; stored in every checkpoint so that a mismatch is caught at load time."""

    obs_size: int
    num_actions: int
    kind: str = "mingru"  # "mingru" (recurrent) or "mlp"
    hidden: int = 64
    layers: int = 2
    highway: bool = True  # MinGRU only: a learned gate mixes each layer's input back into its output
    # The action head: "discrete" (one categorical of num_actions), "multi_discrete" (one categorical per
    # entry of action_nvec; num_actions 0) or "box" (a diagonal Gaussian over action_dims, num_actions 0).
    action_kind: str = "discrete"
    action_nvec: tuple = ()
    action_dims: int = 0
    obs_scale: float = 1.0  # the encoder multiplies observations by this first (1 / 255 for bytes)
    norm_obs: bool = False  # running observation normalisation (train.norm_obs), its statistics in the layout
    # "shared": one torso, the decoder's last row the value; "separate" (MLP only): the value from a critic of
    # its own (encoder, layers and a one-row decoder, "critic.*"), as PureJaxRL's and CleanRL's actor-critics.
    critic: str = "shared"
    encoder: str = "linear"  # "relu" or "tanh": that nonlinearity on the encoder's output, a layer's
    activation: str = "relu"  # the MLP layers' nonlinearity: "relu", or "tanh" (CleanRL's continuous actor-critic)
    # Teams (a multi-agent batch, one policy for every agent): agent_ids > 0 appends the agent's one-hot id (of
    # agent_ids agents) to its observation (policy.agent_id), as JaxMARL's and MAPPO's shared policies read it;
    # world_size > 0 gives the separate critic the env's world state of that many values instead of the actor's
    # observation, the agent's id appended too (MAPPO's centralised critic, policy.critic_input=world_state).
    agent_ids: int = 0
    world_size: int = 0

    def __post_init__(self):
        if self.kind not in ("mingru", "mlp"):
            raise ValueError(f"policy.kind={self.kind!r} is not supported; use 'mingru' or 'mlp'")
        if self.hidden < 1 or self.layers < 1:
            raise ValueError(f"policy.hidden={self.hidden} and policy.layers={self.layers} must both be >= 1")
        object.__setattr__(self, "action_nvec", tuple(int(n) for n in self.action_nvec))  # JSON gives a list
        if self.action_kind not in ACTION_KINDS:
            raise ValueError(f"action kind {self.action_kind!r} is not one of {', '.join(ACTION_KINDS)}")
        if self.action_kind == "multi_discrete" and (not self.action_nvec or min(self.action_nvec) < 1):
            raise ValueError(f"a multi_discrete head needs action_nvec counts >= 1, got {list(self.action_nvec)}")
        if self.action_kind == "box" and self.action_dims < 1:
            raise ValueError(f"a box head needs action_dims >= 1, got {self.action_dims}")
        if self.critic not in ("shared", "separate"):
            raise ValueError(f"policy.critic={self.critic!r} is not supported; use 'shared' or 'separate'")
        if self.critic == "separate" and self.recurrent:
            raise ValueError("policy.critic='separate' is for an MLP policy (policy.kind='mlp'); a MinGRU's critic "
                             "shares its torso")
        if self.encoder not in ("linear", *ACTIVATIONS):
            raise ValueError(f"policy.encoder={self.encoder!r}: use 'linear', 'relu' or 'tanh'")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"policy.activation={self.activation!r}: use 'relu' or 'tanh'")
        if self.agent_ids < 0 or self.world_size < 0 or (self.world_size and self.critic != "separate"):
            raise ValueError(f"agent_ids={self.agent_ids} and world_size={self.world_size} must be >= 0, and a "
                             "world-state critic is a separate one (policy.critic='separate')")

    @property
    def input_size(self) -> int:
        """I, the actor's input per row: the observation, then the agent-id one-hot."""
        return self.obs_size + self.agent_ids

    @property
    def critic_input_size(self) -> int:
        """A separate critic's input per row: the world state and the agent-id one-hot, or the actor's input."""
        return self.world_size + self.agent_ids if self.world_size else self.input_size

    @property
    def head_size(self) -> int:
        """Decoder rows before the value: A logits, sum(nvec) logits, or D Gaussian means."""
        return {"discrete": self.num_actions, "multi_discrete": sum(self.action_nvec),
                "box": self.action_dims}[self.action_kind]

    @property
    def dist_size(self) -> int:
        """Y, the width of policy_forward's distribution output (a box head adds its D log-stds)."""
        return self.head_size + (self.action_dims if self.action_kind == "box" else 0)

    @property
    def action_shape(self) -> tuple[int, ...]:
        """One row's action: () for discrete (an int64), (D,) int64 for multi_discrete, (D,) float32 for box."""
        return {"discrete": (), "multi_discrete": (len(self.action_nvec),), "box": (self.action_dims,)}[self.action_kind]

    @property
    def action_dtype(self):
        return np.float32 if self.action_kind == "box" else np.int64

    @property
    def recurrent(self) -> bool:
        return self.kind == "mingru"

    @property
    def state_layers(self) -> int:
        """Layers that carry recurrent state (0 for an MLP, whose state arrays are then empty)."""
        return self.layers if self.recurrent else 0

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def param_table(spec: PolicySpec) -> list[tuple[str, tuple[int, ...]]]:
    """The parameters in layout order: (name, shape); weights (out, in), applied as x @ w.T. A box head adds its
    state-independent log-stds, train.norm_obs the observation statistics (no gradient: update_obs_norm)."""
    h, o, a = spec.hidden, spec.input_size, spec.head_size
    table = [("enc.w", (h, o)), ("enc.b", (h,))]
    # A MinGRU layer's rows are [z gate | candidate h~ | highway gate]; an MLP layer's are [h].
    width = (3 if spec.highway else 2) * h if spec.recurrent else h
    for layer in range(spec.layers):
        table += [(f"layer{layer}.w", (width, h)), (f"layer{layer}.b", (width,))]
    if spec.critic == "shared":
        table += [("dec.w", (a + 1, h)), ("dec.b", (a + 1,))]  # rows: A logits (or D means), then the value
    else:  # the critic's decoder bias right after the actor's: the A + 1 biases contiguous, as the GPU adds them
        table += [("dec.w", (a, h)), ("dec.b", (a,)), ("critic.dec.b", (1,))]
    if spec.action_kind == "box":  # after the A + 1 biases, where the GPU's env step reads them
        table.append(("dec.logstd", (spec.action_dims,)))
    if spec.critic == "separate":  # the critic's encoder, MLP layers and one-row decoder
        table += [("critic.enc.w", (h, spec.critic_input_size)), ("critic.enc.b", (h,))]
        for layer in range(spec.layers):
            table += [(f"critic.layer{layer}.w", (h, h)), (f"critic.layer{layer}.b", (h,))]
        table.append(("critic.dec.w", (1, h)))
    if spec.norm_obs:
        table += [("obs_norm.mean", (o,)), ("obs_norm.var", (o,)), ("obs_norm.count", (1,))]
    return table


class FlatLayout:
    """An offset table over one flat array: parameters, gradients and each optimizer moment use the same
    layout, so zeroing, clipping and the optimizer step each run over one contiguous buffer."""

    def __init__(self, table: list[tuple[str, tuple[int, ...]]]):
        self.table = list(table)
        self.offsets: dict[str, tuple[int, tuple[int, ...]]] = {}
        offset = 0
        for name, shape in self.table:
            self.offsets[name] = (offset, shape)
            offset += math.prod(shape)
        self.size = offset

    def views(self, flat: np.ndarray) -> dict[str, np.ndarray]:
        """Named views (no copies) into a flat array of this layout."""
        if flat.shape != (self.size,):
            raise ValueError(f"flat array has shape {flat.shape}, layout needs ({self.size},)")
        return {name: flat[off:off + math.prod(shape)].reshape(shape) for name, (off, shape) in self.offsets.items()}

    def matrix_names(self) -> list[str]:
        """2-D weights (Muon orthogonalises these; everything else takes Adam)."""
        return [name for name, shape in self.table if len(shape) == 2]


def init_params(spec: PolicySpec, rng: np.random.Generator, dtype=np.float32) -> np.ndarray:
    """Orthogonal init as in CleanRL: gain sqrt(2) for hidden layers, 0.01 for the logits (a near-uniform
    first policy, or Gaussian means near 0), 1 for the value; zero biases and log-stds (std 1, as CleanRL and
    PureJaxRL); observation statistics mean 0, var 1, count 1e-4 (Gymnasium's RunningMeanStd)."""
    layout = FlatLayout(param_table(spec))
    flat = np.zeros(layout.size, dtype)
    views = layout.views(flat)

    def orthogonal(shape, gain):
        q, r = np.linalg.qr(rng.standard_normal((max(shape), min(shape))))
        q = q * np.sign(np.diag(r))
        return gain * (q if shape[0] >= shape[1] else q.T)

    views["enc.w"][...] = orthogonal(views["enc.w"].shape, math.sqrt(2))
    for layer in range(spec.layers):
        w = views[f"layer{layer}.w"]
        for k in range(w.shape[0] // spec.hidden):
            w[k * spec.hidden:(k + 1) * spec.hidden] = orthogonal((spec.hidden, spec.hidden), 1.0)
    views["dec.w"][:spec.head_size] = orthogonal((spec.head_size, spec.hidden), 0.01)
    if spec.critic == "shared":
        views["dec.w"][-1:] = orthogonal((1, spec.hidden), 1.0)
    else:  # the critic's own stack, initialised as the shared one would be
        views["critic.enc.w"][...] = orthogonal(views["critic.enc.w"].shape, math.sqrt(2))
        for layer in range(spec.layers):
            views[f"critic.layer{layer}.w"][...] = orthogonal((spec.hidden, spec.hidden), 1.0)
        views["critic.dec.w"][...] = orthogonal((1, spec.hidden), 1.0)
    if spec.norm_obs:
        views["obs_norm.var"][...] = 1
        views["obs_norm.count"][...] = 1e-4
    return flat


# ----------------------------------------------------------------------------------------------
# LAYERS: each has a forward returning (output, cache) and a backward taking the cache


def sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # tanh form: no overflow warnings for large |x|


def mingru_g(x):
    """MinGRU's candidate activation: x + 0.5 for x >= 0, sigmoid(x) below; max(x, 0) + sigmoid(min(x, 0))."""
    return np.maximum(x, 0) + sigmoid(np.minimum(x, 0))


def mingru_g_grad(x, g):
    """g'(x) given g = mingru_g(x): 1 for x >= 0, else sigmoid'(x) = g (1 - g)."""
    return np.where(x >= 0, 1.0, g * (1 - g)).astype(g.dtype)


def linear_scan(a, b, h0):
    """h[t] = a[t] * h[t-1] + b[t] with h[-1] = h0. a, b: (T, B, H); h0: (B, H). Returns h (T, B, H).
    A plain loop over time (each step is vectorised over B and H); the CUDA kernel may instead scan in
    parallel over T, since the recurrence is linear, and must agree up to rounding."""
    h = np.empty_like(b)
    prev = h0
    for t in range(len(b)):
        np.multiply(a[t], prev, out=h[t])
        h[t] += b[t]
        prev = h[t]
    return h


def mingru_forward(x, keep, h0, w, bias, highway):
    """One MinGRU layer over time. x: (T, B, H) layer input; keep: (T, B) 0 where an episode starts at
    step t (the incoming state is zeroed), else 1; h0: (B, H) state before step 0; w: (2H or 3H, H).
    z = sigmoid(W_z x), h~ = g(W_h x), h_t = (1 - z) * keep_t * h_{t-1} + z * h~;
    output = h, or with the highway gate s = sigmoid(W_s x): s * h + (1 - s) * x.
    Returns (output (T, B, H), final state (B, H), cache)."""
    hidden = x.shape[-1]
    pre = x @ w.T + bias  # (T, B, 2H or 3H)
    z = sigmoid(pre[..., :hidden])
    h_pre = np.ascontiguousarray(pre[..., hidden:2 * hidden])  # contiguous: the ops below run ~2x faster
    candidate = mingru_g(h_pre)
    decay = (1 - z) * keep[..., None]  # (T, B, H): a_t of the linear recurrence
    h = linear_scan(decay, z * candidate, h0)
    out = h
    s = None
    if highway:
        s = sigmoid(pre[..., 2 * hidden:])
        out = s * h + (1 - s) * x
    cache = (x, keep, h0, w, pre, z, candidate, decay, h, s)
    return out, h[-1], cache


def mingru_backward(dout, cache):
    """Gradients of one MinGRU layer. dout: (T, B, H). Returns (dx, dw, dbias); the state entering the
    horizon is data (carried from the rollout), so no gradient flows into h0."""
    x, keep, h0, w, pre, z, candidate, decay, h, s = cache
    hidden = x.shape[-1]
    dpre = np.empty_like(pre)
    if s is not None:
        dh = dout * s
        dpre[..., 2 * hidden:] = dout * (h - x) * s * (1 - s)
        dx = dout * (1 - s)
    else:
        dh = dout
        dx = np.zeros_like(x)
    # Reverse-time scan: the total gradient into h_t is dh_t + a_{t+1} * (that of h_{t+1}).
    dh_total = np.empty_like(dh)
    carry = np.zeros_like(h0)
    for t in reversed(range(len(dh))):
        np.add(dh[t], carry, out=dh_total[t])
        carry = decay[t] * dh_total[t]
    h_prev = np.concatenate([h0[None], h[:-1]])
    ddecay = dh_total * h_prev
    dz = dh_total * candidate - ddecay * keep[..., None]
    dpre[..., :hidden] = dz * z * (1 - z)
    dpre[..., hidden:2 * hidden] = dh_total * z * mingru_g_grad(pre[..., hidden:2 * hidden], candidate)
    dx += dpre @ w
    rows = dpre.reshape(-1, dpre.shape[-1])
    return dx, rows.T @ x.reshape(-1, hidden), rows.sum(0)


ACTIVATIONS = ("relu", "tanh")


def activate(pre, activation: str):
    """An MLP layer's nonlinearity: relu (the default: a shared torso's value needs unbounded features) or tanh."""
    return np.maximum(pre, 0) if activation == "relu" else np.tanh(pre)


def activation_grad(dout, out, activation: str):
    """d loss / d pre of activate's output `out`: dout where relu passed the value, dout * (1 - out^2) for tanh."""
    return dout * (out > 0) if activation == "relu" else dout * (1 - out * out)


def mlp_forward(x, w, bias, activation: str = "relu"):
    """One MLP layer: activate(x @ w.T + b), x (..., H)."""
    out = activate(x @ w.T + bias, activation)
    return out, (x, out)


def mlp_backward(dout, cache, w, activation: str = "relu"):
    x, out = cache
    dpre = activation_grad(dout, out, activation)
    rows = dpre.reshape(-1, dpre.shape[-1])
    return dpre @ w, rows.T @ x.reshape(-1, x.shape[-1]), rows.sum(0)


def policy_forward(spec: PolicySpec, params: dict, obs, starts, state, world=None):
    """The whole policy over a horizon segment. obs: (T, B, I); starts: (T, B) 1 where obs[t] is an
    episode's first observation; state: (L_state, B, H) entering step 0 (L_state = 0 for an MLP); world:
    (T, B, C), a world-state critic's input (spec.world_size > 0), else None.
    Returns the head's distribution parameters (T, B, Y) (logits for the discrete kinds), values (T, B), the
    state after the last step, and the cache. obs may be bytes (uint8): encoder_input scales it."""
    x0 = encoder_input(spec, params, obs)
    keep = 1 - starts.astype(x0.dtype)
    y, new_state, actor = stack_forward(spec, params, "", x0, keep, state)  # (T, B, A + 1), or A without a value
    critic_x = x0 if not spec.world_size else world.astype(x0.dtype)  # the world state as it is: no scaling
    if spec.critic == "shared":
        dist, values, critic = y[..., :-1], y[..., -1], None
    else:
        values, _, critic = stack_forward(spec, params, "critic.", critic_x, keep, state)
        dist, values = y, values[..., 0]
    if spec.action_kind == "box":  # means, then the log-stds broadcast to every row
        dist = np.concatenate([dist, np.broadcast_to(params["dec.logstd"], dist.shape)], axis=-1)
    return dist, values, new_state, (x0, actor, critic, critic_x)


def stack_forward(spec: PolicySpec, params: dict, prefix: str, x0, keep, state):
    """One stack, the encoder, layers and decoder named prefix + "enc." ... (the policy's, or a separate critic's
    "critic." one, always an MLP), over encoder input x0 (T, B, O): its decoder output (T, B, rows), the state
    after the last step and the cache."""
    x = x0 @ params[prefix + "enc.w"].T + params[prefix + "enc.b"]  # (T, B, H)
    x = x if spec.encoder == "linear" else activate(x, spec.encoder)
    caches, new_state = [], np.empty_like(state)
    for layer in range(spec.layers):
        w, bias = params[f"{prefix}layer{layer}.w"], params[f"{prefix}layer{layer}.b"]
        if spec.recurrent:
            x, new_state[layer], cache = mingru_forward(x, keep, state[layer], w, bias, spec.highway)
        else:
            x, cache = mlp_forward(x, w, bias, spec.activation)
        caches.append(cache)
    return x @ params[prefix + "dec.w"].T + params[prefix + "dec.b"], new_state, (x, caches)


def encoder_input(spec: PolicySpec, params: dict, obs):
    """What the encoder multiplies: obs in the weights' dtype, times spec.obs_scale (bytes to [0, 1]), then with
    spec.norm_obs clip((x - mean) / sqrt(var + 1e-8), -10, 10) from the layout's statistics. Float observations
    without either reach the encoder unchanged (no copy)."""
    dtype = params["enc.w"].dtype
    x = obs if obs.dtype == dtype else obs.astype(dtype)
    if spec.obs_scale != 1:
        x = x * dtype.type(spec.obs_scale)
    if spec.norm_obs:
        x = np.clip((x - params["obs_norm.mean"]) / np.sqrt(params["obs_norm.var"] + dtype.type(OBS_NORM_EPS)),
                    -OBS_NORM_CLIP, OBS_NORM_CLIP)
    return x


def policy_backward(spec: PolicySpec, params: dict, grads: dict, dlogits, dvalues, cache) -> None:
    """Accumulate parameter gradients (into the `grads` views) given dlogits (T, B, Y), dvalues (T, B).
    A box head's log-std gradient is the sum over rows of its columns of dlogits."""
    obs, actor, critic, critic_x = cache
    if spec.action_kind == "box":
        d = spec.action_dims
        grads["dec.logstd"] += dlogits[..., d:].reshape(-1, d).sum(0)
        dlogits = dlogits[..., :d]
    if spec.critic == "shared":
        stack_backward(spec, params, grads, "", np.concatenate([dlogits, dvalues[..., None]], axis=-1), obs, actor)
    else:
        stack_backward(spec, params, grads, "", dlogits, obs, actor)
        stack_backward(spec, params, grads, "critic.", dvalues[..., None], critic_x, critic)


def stack_backward(spec: PolicySpec, params: dict, grads: dict, prefix: str, dy, obs, cache) -> None:
    """stack_forward's gradients given its decoder output's dy (T, B, rows) and encoder input obs (T, B, O)."""
    top, caches = cache
    rows = dy.reshape(-1, dy.shape[-1])
    grads[prefix + "dec.w"] += rows.T @ top.reshape(-1, top.shape[-1])
    grads[prefix + "dec.b"] += rows.sum(0)
    dx = dy @ params[prefix + "dec.w"]
    for layer in reversed(range(spec.layers)):
        w = params[f"{prefix}layer{layer}.w"]
        if spec.recurrent:
            dx, dw, db = mingru_backward(dx, caches[layer])
        else:
            dx, dw, db = mlp_backward(dx, caches[layer], w, spec.activation)
        grads[f"{prefix}layer{layer}.w"] += dw
        grads[f"{prefix}layer{layer}.b"] += db
    if spec.encoder != "linear":  # layer 0's input is the encoder's activated output
        dx = activation_grad(dx, caches[0][0], spec.encoder)
    rows = dx.reshape(-1, dx.shape[-1])
    grads[prefix + "enc.w"] += rows.T @ obs.reshape(-1, obs.shape[-1])
    grads[prefix + "enc.b"] += rows.sum(0)


# ----------------------------------------------------------------------------------------------
# SAMPLING


def policy_act(spec, param_views, obs, starts, state, rng, deterministic=False, uniforms=None, mask=None,
               world=None):
    """One policy step for R rows, as a rollout takes it (the host twin of the CUDA trainer's fused policy
    step): obs (R, I), starts (R,), state (Ls, R, H) -> actions (R, *spec.action_shape) (sampled with rng's
    uniforms, or the given uniforms (R, *uniforms_per_row(spec)) float32, or the mode if deterministic),
    logp (R,), values (R,), the new state. mask (R, A), 1 = available (a discrete head; None: all are): only
    available actions are taken, logp is the masked distribution's. world (R, C): a world-state critic's input."""
    logits, values, state, _ = policy_forward(spec, param_views, obs[None], starts[None], state,
                                              None if world is None else world[None])
    if mask is not None:
        logits = mask_logits(logits, mask[None])
    if deterministic:
        actions = head_mode(spec, logits[0])
        return actions, head_log_prob(spec, logits[0], actions)[0], values[0], state
    if uniforms is None:
        uniforms = rng.random((len(obs), *uniforms_per_row(spec)), np.float32)
    if mask is not None:
        uniforms = masked_uniforms(uniforms)
    actions, logp = sample_head(spec, logits[0], uniforms)
    return actions, logp, values[0], state


# ----------------------------------------------------------------------------------------------
# TEAMS: action masks, agent ids

MASKED_LOGIT = -1e10  # JaxMARL's: exp(-1e10 - max) is exactly 0 in float32 and float64


def mask_logits(logits, mask):
    """Logits (..., A) of the masked categorical: an unavailable action's (mask 0) set to MASKED_LOGIT, so that
    log_softmax, sampling, log-probabilities and entropies are those of the distribution over the available
    actions alone (probability exactly 0 elsewhere; its entropy term 0 * log p is 0, not NaN)."""
    return np.where(mask.astype(bool), logits, logits.dtype.type(MASKED_LOGIT))


def mask_logits_grad(dlogits, mask):
    """mask_logits' backward: the gradient passes to the available actions' logits; an unavailable one's is 0."""
    return np.where(mask.astype(bool), dlogits, 0).astype(dlogits.dtype)


def masked_uniforms(uniforms):
    """Sampling uniforms for a masked categorical: a 0 becomes 2^-25 (half the float32 uniforms' step), so that
    inverse-CDF sampling (cdf < u * total) passes over leading unavailable actions, whose cdf is exactly 0."""
    return np.maximum(uniforms, np.float32(2.0 ** -25))


def agent_onehot(num_envs: int, num_agents: int, dtype=np.float32, value=1):
    """(num_envs * num_agents, num_agents): row env * num_agents + agent holds `value` in column agent, 0 elsewhere
    (the rows of a multi-agent batch; value 1 / spec.obs_scale reaches the encoder as 1)."""
    return np.tile(np.eye(num_agents, dtype=dtype) * np.asarray(value, dtype), (num_envs, 1))


# ----------------------------------------------------------------------------------------------
# GAE: advantages, plain or V-trace corrected


def gae(values, last_value, rewards, dones, gamma, lam, ratios=None, rho_clip=1.0, c_clip=1.0):
    """Advantages by the backward recursion, all (T, B) except last_value (B,) = V(obs after step T-1).
    dones[t]: the episode ended at step t (the next obs starts a new one), so nothing is bootstrapped
    across it. With ratios = pi/mu (V-trace, for stale data): rho = min(ratios, rho_clip),
    c = lam * min(ratios, c_clip) and the result is v_s - V(x_s) (as in PufferLib's advantage).
    Without ratios this is exactly GAE(lambda): rho = 1, c = lam."""
    advantages = np.zeros_like(values)
    nonterminal = 1 - dones.astype(values.dtype)
    next_value, next_adv = last_value, np.zeros_like(last_value)
    for t in reversed(range(len(values))):
        delta = rewards[t] + gamma * nonterminal[t] * next_value - values[t]
        if ratios is None:
            next_adv = delta + gamma * lam * nonterminal[t] * next_adv
        else:
            rho = np.minimum(ratios[t], rho_clip)
            c = lam * np.minimum(ratios[t], c_clip)
            next_adv = rho * delta + gamma * c * nonterminal[t] * next_adv
        advantages[t] = next_adv
        next_value = values[t]
    return advantages


# ----------------------------------------------------------------------------------------------
# PPO LOSS


def ppo_loss(logits, values, actions, old_logp, old_values, advantages, returns,
             clip_coef, vf_clip_coef, vf_coef, ent_coef, spec=None, pg_weights=None):
    """Clipped PPO loss, mean over all N = T * B samples, and its gradient.
    logits (..., Y): the head's distribution parameters (spec's head; spec None: one categorical);
    actions (..., *spec.action_shape); values, old_logp, old_values, advantages, returns (...).
    loss = mean(max(-adv * r, -adv * clip(r, 1 - c, 1 + c)))
         + vf_coef * 0.5 * mean(max((v - R)^2, (v_old + clip(v - v_old, -vc, vc) - R)^2))
         - ent_coef * mean(entropy),  with r = exp(logp - old_logp).
    pg_weights (broadcast to advantages' shape, > 0): each sample's policy-loss term times its weight (prioritised
    draws' importance weights), computed as the advantage times the weight, the same for a positive weight.
    Returns (loss, dlogits, dvalues, stats dict)."""
    n = values.size
    if pg_weights is not None:
        advantages = advantages * pg_weights
    logp, entropy_each, head_cache = head_log_prob(spec, logits, actions)
    log_ratio = logp - old_logp
    ratio = np.exp(log_ratio)
    pg_unclipped = -advantages * ratio
    pg_clipped = -advantages * np.clip(ratio, 1 - clip_coef, 1 + clip_coef)
    pg_loss = np.maximum(pg_unclipped, pg_clipped).mean()
    # d/dratio of max(...): the unclipped branch when it is the larger, else the clipped one, whose
    # slope is zero outside the clip range.
    inside = (ratio > 1 - clip_coef) & (ratio < 1 + clip_coef)
    dratio = np.where((pg_unclipped >= pg_clipped) | inside, -advantages, 0.0) / n
    dlogp = dratio * ratio
    dlogits = head_grad(spec, head_cache, dlogp, ent_coef / n)
    entropy = entropy_each.mean()

    v_clipped = old_values + np.clip(values - old_values, -vf_clip_coef, vf_clip_coef)
    v_unclipped_sq = (values - returns) ** 2
    v_clipped_sq = (v_clipped - returns) ** 2
    v_loss = 0.5 * np.maximum(v_unclipped_sq, v_clipped_sq).mean()
    v_inside = np.abs(values - old_values) < vf_clip_coef
    dvalues = np.where(v_unclipped_sq >= v_clipped_sq, values - returns,
                       np.where(v_inside, v_clipped - returns, 0.0)) * (vf_coef / n)

    loss = pg_loss + vf_coef * v_loss - ent_coef * entropy
    stats = {
        "policy_loss": float(pg_loss),
        "value_loss": float(v_loss),
        "entropy": float(entropy),
        "approx_kl": float(((ratio - 1) - log_ratio).mean()),
        "clipfrac": float((~inside).mean()),
    }
    return float(loss), dlogits.astype(logits.dtype), dvalues.astype(values.dtype), stats


# ----------------------------------------------------------------------------------------------
# STATISTICS


def explained_variance(predicted, target) -> float:
    var = float(np.var(target))
    return float("nan") if var == 0 else 1.0 - float(np.var(target - predicted)) / var
