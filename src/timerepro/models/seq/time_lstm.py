"""The recurrent models of time2vec: LSTM+T, LSTM+Time2Vec, TimeLSTM1/3 with and without Time2Vec.

* LSTM+T (time2vec Eqs. 2-7): `torch.nn.LSTM` over x'_j = [x_j; tau_j]; LSTM+Time2Vec: x'_j = [x_j; t2v(tau_j)]
  with the hidden size reduced so both have (almost) the same number of parameters (`matched_hidden_size`).
* TimeLSTM1 and TimeLSTM3 (Zhu et al. 2017; time2vec Appendix C): peephole LSTMs with time gates, written as
  one cell (`TimeLSTMCell`) whose time input is either tau (a vector of size 1) or t2v(tau) (Eqs. 17-21: the
  vectors u_t, v_t become matrices U_t, V_t). Where the TimeLSTM code the time2vec authors ran differs from
  the printed equations, the code is the default and the paper's form a named option (docs/time2vec.md):
  `time_inner` (tanh in the code, sigma in Appendix C) and `t1_constraint` (TLSTM3's W_t1 <= 0: the code's
  switch keeps max(W, -1e-5); the paper's min(W, 0)).

Inputs: `types` (B, L) integer event types (one-hot encoded inside, as TimeLSTM's ONE_HOT; `n_types = 0` for
times-only data), `tau` (B, L) time inputs, `lengths` (B,). Outputs: per-step hidden states (B, L, H).
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import nn

from timerepro.encoders import Time2Vec

# config key -> Time2Vec argument (t2v_init: the learned parameters' initial distribution, docs/time2vec.md)
T2V_KEYS = {"activation": "activation", "frequencies": "frequencies", "linear_term": "linear_term", "t2v_init": "init"}


def time_features(time_input: str, config: dict) -> tuple[nn.Module | None, int]:
    """The time featurizer and its width: 'tau' -> (None, 1); 't2v' -> (Time2Vec of k sines (+1 linear), k (+1))."""
    if time_input == "tau":
        return None, 1
    if time_input != "t2v":
        raise ValueError(f"time_input must be 'tau' or 't2v', got {time_input!r}")
    k, linear = int(config["k_sines"]), bool(config.get("linear_term", True))
    enc = Time2Vec(k + int(linear), **{arg: config[key] for key, arg in T2V_KEYS.items() if key in config})
    return enc, enc.dim


class EventInput(nn.Module):
    """x'_j = [one_hot(type_j); time features of tau_j]: (B, L) types and taus -> (B, L, n_types + d_time)."""

    def __init__(self, n_types: int, time_input: str, config: dict):
        super().__init__()
        self.n_types = n_types
        self.t2v, self.d_time = time_features(time_input, config)
        self.dim = n_types + self.d_time

    def time(self, tau: torch.Tensor) -> torch.Tensor:
        return tau.unsqueeze(-1) if self.t2v is None else self.t2v(tau)  # (B, L, d_time)

    def onehot(self, types: torch.Tensor, width: int | None = None) -> torch.Tensor:
        """(B, L, width) float zeros with 1.0 at each type (the first n_types columns); scattered, not through
        `torch.nn.functional.one_hot`'s int64 tensor (a raw N-TIDIGITS18 evaluation batch: 7.5 GB of it)."""
        out = torch.zeros(*types.shape, width or self.n_types, device=types.device)
        return out.scatter_(-1, types.unsqueeze(-1), 1.0)

    def forward(self, types: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
        t = self.time(tau)
        if not self.n_types:
            return t
        x = self.onehot(types, self.dim)  # (B, L, n_types + d_time): the one-hot, then the time features
        x[..., self.n_types:] = t
        return x


class LSTMTime(nn.Module):
    """LSTM+T (time_input='tau') or LSTM+Time2Vec (time_input='t2v') followed by a linear read-out."""

    def __init__(self, n_types: int, n_out: int, hidden: int, time_input: str, config: dict):
        super().__init__()
        self.inputs = EventInput(n_types, time_input, config)
        self.hidden = hidden
        self.lstm = nn.LSTM(self.inputs.dim, hidden, batch_first=True)
        self.out = nn.Linear(hidden, n_out)

    def states(self, types: torch.Tensor, tau: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Hidden states (B, L, H), meaningful up to each sequence's length (the tasks read no further). The LSTM
        runs over the padded batch, not a packed one: a step never reads a later one, so the states up to each length
        are the packed run's (at float rounding), and on CPU the packed backward fills a zero tensor of the whole
        batch per step (quadratic in the length: one raw N-TIDIGITS18 batch of ~14 k steps took hours;
        docs/time2vec.md, "Padded, not packed")."""
        h, _ = self.lstm(self.inputs(types, tau))
        return h


def _constraint(name: str) -> Callable[[torch.Tensor], torch.Tensor]:
    if name == "code":  # T.switch(T.ge(W, -1e-5), W, -1e-5) in ZJULearning/time_lstm tlstm3.py
        return lambda w: torch.clamp(w, min=-1e-5)
    if name == "paper":  # Zhu et al. 2017: W_t1 <= 0
        return lambda w: torch.clamp(w, max=0.0)
    raise ValueError(f"t1_constraint must be 'code' or 'paper', got {name!r}")


class TimeLSTMCell(nn.Module):
    """One step of TimeLSTM1 or TimeLSTM3 (peepholes on; TLSTM3 couples input and forget gates).

    TLSTM1:  T_j = s(W_t1 x_j + g(tau_j U_t1) + b_t1);  i_j, f_j with peepholes on c_{j-1}
             c_j = f_j c_{j-1} + i_j T_j cbar_j;  o_j = s(W_o x_j + tau_j V_o + U_o h_{j-1} + w_co c_j + b_o)
             h_j = o_j tanh(c_j)
    TLSTM3:  T1_j, T2_j as T_j (U_t1 constrained);  ctilde_j = (1 - i_j T1_j) c_{j-1} + i_j T1_j cbar_j
             c_j = (1 - i_j) c_{j-1} + i_j T2_j cbar_j;  o_j with peephole on ctilde_j;  h_j = o_j tanh(ctilde_j)
    where tau_j is a row of size d_time (1: tau itself; k+1: t2v(tau)), g = tanh (code) or sigmoid (paper).
    """

    def __init__(self, d_in: int, d_time: int, hidden: int, variant: int, *, time_inner: str = "tanh",
                 t1_constraint: str = "code"):
        super().__init__()
        if variant not in (1, 3):
            raise ValueError(f"TimeLSTM variant must be 1 or 3, got {variant}")
        self.variant, self.hidden = variant, hidden
        self.inner = {"tanh": torch.tanh, "sigmoid": torch.sigmoid}[time_inner]
        self.constrain = _constraint(t1_constraint)
        gates = ["i", "f", "c", "o", "t1"] if variant == 1 else ["i", "c", "o", "t1", "t2"]
        self.gate_names = gates
        normal = lambda *shape: nn.Parameter(torch.randn(*shape) * 0.1)  # lasagne init.Normal(0.1)
        self.W_x = nn.ParameterDict({g: normal(d_in, hidden) for g in gates})
        self.W_h = nn.ParameterDict({g: normal(hidden, hidden) for g in ("i", "f", "c", "o") if g in gates})
        self.b = nn.ParameterDict({g: nn.Parameter(torch.zeros(hidden)) for g in gates})
        self.W_peep = nn.ParameterDict({g: normal(hidden) for g in ("i", "f", "o") if g in gates})
        self.W_t = nn.ParameterDict({"o": normal(d_time, hidden), "t1": normal(d_time, hidden)})
        if variant == 3:
            self.W_t["t2"] = normal(d_time, hidden)
            with torch.no_grad():  # tlstm3.py: tgate1 W_t ~ Uniform(-1, 0)
                self.W_t["t1"].uniform_(-1.0, 0.0)

    def gates(self, x: torch.Tensor, t: torch.Tensor, h: torch.Tensor, c: torch.Tensor) -> dict[str, torch.Tensor]:
        """Every gate and state of one step: x (B, d_in), t (B, d_time), h and c (B, H) -> dict of (B, H)."""
        pre = {g: x @ self.W_x[g] + self.b[g] for g in self.gate_names}
        for g in self.W_h:
            pre[g] = pre[g] + h @ self.W_h[g]
        out = {}
        out["i"] = torch.sigmoid(pre["i"] + c * self.W_peep["i"])
        out["cbar"] = torch.tanh(pre["c"])
        w_t1 = self.W_t["t1"] if self.variant == 1 else self.constrain(self.W_t["t1"])
        out["t1"] = torch.sigmoid(pre["t1"] + self.inner(t @ w_t1))
        o_pre = pre["o"] + t @ self.W_t["o"]
        if self.variant == 1:
            out["f"] = torch.sigmoid(pre["f"] + c * self.W_peep["f"])
            out["c"] = out["f"] * c + out["i"] * out["t1"] * out["cbar"]
            out["o"] = torch.sigmoid(o_pre + out["c"] * self.W_peep["o"])
            out["h"] = out["o"] * torch.tanh(out["c"])
        else:
            out["t2"] = torch.sigmoid(pre["t2"] + self.inner(t @ self.W_t["t2"]))
            out["ctilde"] = (1 - out["i"] * out["t1"]) * c + out["i"] * out["t1"] * out["cbar"]
            out["c"] = (1 - out["i"]) * c + out["i"] * out["t2"] * out["cbar"]
            out["o"] = torch.sigmoid(o_pre + out["ctilde"] * self.W_peep["o"])
            out["h"] = out["o"] * torch.tanh(out["ctilde"])
        return out


class TimeLSTM(nn.Module):
    """TLSTM1/TLSTM3 (time_input='tau') or TLSTM1/3+Time2Vec (time_input='t2v') with a linear read-out.

    Padded steps (mask 0) keep the previous state, as the TimeLSTM code's `step_masked`.
    """

    def __init__(self, n_types: int, n_out: int, hidden: int, time_input: str, config: dict, variant: int):
        super().__init__()
        self.inputs = EventInput(n_types, time_input, config)
        self.hidden = hidden
        self.cell = TimeLSTMCell(n_types, self.inputs.d_time, hidden, variant,
                                 time_inner=config.get("time_inner", "tanh"),
                                 t1_constraint=config.get("t1_constraint", "code"))
        self.out = nn.Linear(hidden, n_out)
        nn.init.normal_(self.out.weight, std=0.01)  # lasagne DenseLayer W=init.Normal()
        nn.init.zeros_(self.out.bias)

    def states(self, types: torch.Tensor, tau: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        B, L = types.shape
        x = self.inputs.onehot(types) if self.inputs.n_types else tau.new_zeros(B, L, 0)  # (B, L, n_types)
        t = self.inputs.time(tau)  # (B, L, d_time)
        mask = (torch.arange(L, device=types.device).unsqueeze(0) < lengths.to(types.device).unsqueeze(1))
        h = c = tau.new_zeros(B, self.hidden)
        hs = []
        for j in range(L):
            step = self.cell.gates(x[:, j], t[:, j], h, c)
            keep = mask[:, j].unsqueeze(-1)  # (B, 1)
            h, c = torch.where(keep, step["h"], h), torch.where(keep, step["c"], c)
            hs.append(h)
        return torch.stack(hs, dim=1)  # (B, L, H)


class Time2VecClassifier(nn.Module):
    """The synthetic task's model: p(y=1 | tau) = sigmoid(a . t2v(tau) + b) (time2vec 5.2); returns the logit."""

    def __init__(self, dim: int, config: dict):
        super().__init__()
        self.t2v = Time2Vec(dim, **{arg: config[key] for key, arg in T2V_KEYS.items() if key in config})
        self.out = nn.Linear(dim, 1)

    def forward(self, tau: torch.Tensor) -> torch.Tensor:
        return self.out(self.t2v(tau)).squeeze(-1)  # (N,): the pre-activation of Figure 3

    def stacked(self, params: dict[str, torch.Tensor], tau: torch.Tensor) -> torch.Tensor:
        """`forward` for S members at once, written out per member axis (vmap's per-operator cost, bitwise the same):
        params (S, *shape) by name (absent ones: this module's own, shared), tau (S, N) -> logits (S, N)."""
        t2v = self.t2v
        shared = {**dict(self.named_buffers()), **dict(self.named_parameters())}  # what a member does not stack

        def member(name: str) -> torch.Tensor:  # a vector's (S, 1, n) when stacked, else the shared (n,)
            return params[name].unsqueeze(1) if name in params else shared[name]

        x = tau.unsqueeze(-1)  # (S, N, 1)
        z = t2v.ACTIVATIONS[t2v.activation](x * member("t2v.w") + member("t2v.phi"))  # (S, N, k)
        if t2v.linear_term:
            z = torch.cat([member("t2v.w0") * x + member("t2v.phi0"), z], dim=-1)  # (S, N, dim)
        # (S, N, dim) x (S, dim, 1) -> (S, N, 1), plus each member's bias (S, 1, 1)
        return (z @ params["out.weight"].transpose(-2, -1) + member("out.bias")).squeeze(-1)


def n_parameters(model: nn.Module) -> int:
    return int(sum(p.numel() for p in model.parameters() if p.requires_grad))


def matched_hidden_size(make: Callable[[int], nn.Module], target: int, upper: int) -> int:
    """The hidden size h <= upper whose model's trainable parameter count is closest to `target` (ties: larger h).

    time2vec 5.1: "the hidden size of LSTM+Time2Vec is reduced so both have (almost) the same parameters".
    Parameter counts grow monotonically with h, so a bisection finds the crossing, then both neighbours are compared.
    """
    lo, hi = 1, upper
    while lo < hi:  # smallest h with count(h) >= target
        mid = (lo + hi) // 2
        if n_parameters(make(mid)) >= target:
            hi = mid
        else:
            lo = mid + 1
    candidates = [h for h in (lo - 1, lo) if 1 <= h <= upper]
    return min(candidates, key=lambda h: (abs(n_parameters(make(h)) - target), -h))


# ---------------------------------------------------------------- builders (params/models.yaml `module:`)

def _hidden(config: dict, make: Callable[[int], nn.Module], base: Callable[[int], nn.Module]) -> int:
    """The configured hidden size, or the one matched to the LSTM+T of that size when `match_parameters`."""
    hidden = int(config["hidden"])
    if config.get("time_input") == "t2v" and config.get("match_parameters", False):
        return matched_hidden_size(make, n_parameters(base(hidden)), hidden)
    return hidden


def lstm(config: dict, n_types: int, n_out: int) -> LSTMTime:
    """LSTM+T or LSTM+Time2Vec (`time_input`), hidden size matched to LSTM+T when `match_parameters`."""
    make = lambda h: LSTMTime(n_types, n_out, h, config["time_input"], config)
    base = lambda h: LSTMTime(n_types, n_out, h, "tau", config)
    return make(_hidden(config, make, base))


def time_lstm(config: dict, n_types: int, n_out: int) -> TimeLSTM:
    """TLSTM1/TLSTM3 (`variant`) with tau or t2v(tau) as time input (`time_input`)."""
    variant = int(config["variant"])
    make = lambda h: TimeLSTM(n_types, n_out, h, config["time_input"], config, variant)
    base = lambda h: TimeLSTM(n_types, n_out, h, "tau", config, variant)
    return make(_hidden(config, make, base))


def synthetic_classifier(config: dict, n_types: int = 0, n_out: int = 1) -> Time2VecClassifier:
    return Time2VecClassifier(int(config["t2v_dim"]), config)
