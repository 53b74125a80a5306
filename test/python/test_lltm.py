"""gpuaug::lltm and its private forward and backward ops: values and gradients against a float64
reference, gradcheck, opcheck, compile, export, TorchScript, CUDA graphs, gpuaug.nn.LLTM, errors."""
import io
import math
import re

import pytest
import torch
import torch.nn.functional as F

import gpuaug
from gpuaug_testing import DEVICES, DTYPES, requires_cuda

lltm = torch.ops.gpuaug.lltm
lltm_forward = torch.ops.gpuaug._lltm_forward
lltm_backward = torch.ops.gpuaug._lltm_backward

# (B, I, S): B = 1; I = 1; S not a multiple of any vector width; S a multiple of all of them
# (the 16-byte path); large B and S.
SIZES = [(1, 5, 7), (4, 1, 33), (3, 8, 32), (16, 32, 128), (96, 40, 200), (300, 64, 264)]

# The gates go through a matrix product in the dtype and are rounded to it once; the cell computes
# in float32 for the half types. Bounds relative to float64 on the same (rounded) inputs.
TOLERANCES = {
    torch.float32: dict(rtol=1e-5, atol=2e-5),
    torch.float64: dict(rtol=1e-12, atol=1e-12),
    torch.float16: dict(rtol=5e-3, atol=5e-3),
    torch.bfloat16: dict(rtol=4e-2, atol=4e-2),
}


def lltm_ref(input, weights, bias, old_h, old_cell):
    """The semantics, written plainly in float64."""
    x = torch.cat([old_h, input], dim=1)
    gates = x @ weights.t() + bias
    i, o, c = gates.chunk(3, dim=1)
    new_cell = old_cell + F.elu(c) * torch.sigmoid(i)
    return torch.tanh(new_cell) * torch.sigmoid(o), new_cell


def make_args(b, i, s, dtype=torch.float32, device="cpu", seed=0, requires_grad=False):
    """Random inputs whose gates cover both signs (both ELU branches) and saturation."""
    g = torch.Generator().manual_seed(seed)
    scale = 1.5 / math.sqrt(s + i)
    shapes = [((b, i), 1.0), ((3 * s, s + i), 2 * scale * math.sqrt(3)), ((3 * s,), 0.5),
              ((b, s), 0.8), ((b, s), 1.0)]
    return [(torch.randn(shape, generator=g, dtype=torch.float64) * k).to(dtype).to(device)
            .requires_grad_(requires_grad) for shape, k in shapes]


def float64(tensors, requires_grad=False):
    return [t.detach().double().cpu().requires_grad_(requires_grad) for t in tensors]


def close(actual, expected, dtype):
    torch.testing.assert_close(actual.detach().cpu().double(), expected.detach().double(),
                               **TOLERANCES[dtype])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", SIZES, ids=lambda s: "B%d-I%d-S%d" % s)
def test_values_and_gradients(size, dtype, device):
    args = make_args(*size, dtype, device, seed=sum(size), requires_grad=True)
    new_h, new_cell = lltm(*args)
    assert new_h.shape == new_cell.shape == (size[0], size[2])
    assert new_h.dtype == dtype and new_h.device.type == device

    ref_args = float64(args, requires_grad=True)
    ref_h, ref_cell = lltm_ref(*ref_args)
    close(new_h, ref_h, dtype)
    close(new_cell, ref_cell, dtype)

    g = torch.Generator().manual_seed(7)
    grad_h = torch.randn(new_h.shape, generator=g, dtype=torch.float64)
    grad_cell = torch.randn(new_h.shape, generator=g, dtype=torch.float64)
    grads = torch.autograd.grad((new_h, new_cell),
                                args, (grad_h.to(dtype).to(device), grad_cell.to(dtype).to(device)))
    ref_grads = torch.autograd.grad((ref_h, ref_cell), ref_args,
                                    (grad_h.to(dtype).double(), grad_cell.to(dtype).double()))
    # Gradients sum over B (weights, bias) or over 3S (input, old_h): allow for the length.
    reduction = math.sqrt(max(size[0], 3 * size[2]))
    for name, actual, expected in zip(["input", "weights", "bias", "old_h", "old_cell"], grads,
                                      ref_grads):
        assert actual.shape == expected.shape and actual.dtype == dtype, name
        tol = {k: v * reduction for k, v in TOLERANCES[dtype].items()}
        torch.testing.assert_close(actual.cpu().double(), expected, **tol, msg=lambda m: f"{name}: {m}")


@pytest.mark.parametrize("device", DEVICES)
def test_both_elu_branches_and_saturation(device):
    # Gates chosen directly through the bias: weights zero, so gates = bias.
    s = 6
    bias = torch.tensor([-30.0, -1.0, 0.0, 0.5, 2.0, 30.0] * 3, dtype=torch.float64, device=device)
    args = [torch.randn(2, 3, dtype=torch.float64, device=device),
            torch.zeros(3 * s, s + 3, dtype=torch.float64, device=device), bias,
            torch.randn(2, s, dtype=torch.float64, device=device),
            torch.randn(2, s, dtype=torch.float64, device=device)]
    args = [a.requires_grad_() for a in args]
    out = lltm(*args)
    ref_args = float64(args, requires_grad=True)
    ref = lltm_ref(*ref_args)
    for a, r in zip(out, ref):
        close(a, r, torch.float64)
    grads = torch.autograd.grad(sum(o.sum() for o in out), args)
    ref_grads = torch.autograd.grad(sum(r.sum() for r in ref), ref_args)
    for a, r in zip(grads, ref_grads):
        close(a, r, torch.float64)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("used", ["new_h", "new_cell"])
def test_gradient_of_one_output(used, device):
    # The other output's gradient is undefined (no zeros are passed in by autograd).
    args = make_args(5, 4, 9, torch.float64, device, seed=3, requires_grad=True)
    out = dict(zip(["new_h", "new_cell"], lltm(*args)))
    ref_args = float64(args, requires_grad=True)
    ref = dict(zip(["new_h", "new_cell"], lltm_ref(*ref_args)))
    grads = torch.autograd.grad(out[used].sum(), args)
    ref_grads = torch.autograd.grad(ref[used].sum(), ref_args)
    for a, r in zip(grads, ref_grads):
        close(a, r, torch.float64)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("size", [(3, 2, 5), (2, 3, 4)], ids=["S5", "S4"])
def test_gradcheck(size, device):
    args = make_args(*size, torch.float64, device, seed=11, requires_grad=True)
    assert torch.autograd.gradcheck(lltm, args)
    assert torch.autograd.gradcheck(gpuaug.lltm, args)
    assert torch.autograd.gradcheck(lambda *a: lltm_forward(*a)[:2], args)


@pytest.mark.parametrize("device", DEVICES)
def test_double_backward_is_refused(device):
    args = make_args(2, 3, 4, torch.float64, device, seed=12, requires_grad=True)
    new_h, _ = lltm(*args)
    (grad_input,) = torch.autograd.grad(new_h.sum(), args[0], create_graph=True)
    with pytest.raises(RuntimeError, match="gpuaug::lltm: double backward is not supported"):
        grad_input.sum().backward()


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES)
def test_cuda_matches_cpu_and_unaligned_operands(dtype):
    # old_cell at a storage offset of one element: the same numbers as the aligned call, and as
    # the CPU's within the dtype's tolerance.
    args = make_args(8, 16, 64, dtype, "cuda", seed=21)
    aligned = lltm(*args)
    storage = torch.empty(args[4].numel() + 1, dtype=dtype, device="cuda")
    shifted = storage[1:].view_as(args[4]).copy_(args[4])
    unaligned = lltm(*args[:4], shifted)
    for a, u in zip(aligned, unaligned):
        torch.testing.assert_close(a, u, rtol=0, atol=0)
    on_cpu = lltm(*[a.cpu() for a in args])
    for a, c in zip(aligned, on_cpu):
        torch.testing.assert_close(a.cpu().double(), c.double(), **TOLERANCES[dtype])


@pytest.mark.parametrize("device", DEVICES)
def test_strided_inputs(device):
    args = make_args(6, 5, 12, torch.float32, device, seed=13, requires_grad=True)
    # Column-major copies and a stepped bias: the same values in other layouts.
    column_major = [a.detach().t().contiguous().t().requires_grad_() for a in args]
    stepped_bias = torch.stack([args[2].detach()] * 2, 1).flatten()[::2].requires_grad_()
    views = column_major[:2] + [stepped_bias] + column_major[3:]
    assert not views[0].is_contiguous() and not views[4].is_contiguous()
    # The matrix product may sum in another order for another layout.
    out, ref = lltm(*views), lltm(*args)
    for a, r in zip(out, ref):
        torch.testing.assert_close(a, r, **TOLERANCES[torch.float32])
    grads = [torch.randn_like(o) for o in out]
    for a, r in zip(torch.autograd.grad(out, views, grads), torch.autograd.grad(ref, args, grads)):
        torch.testing.assert_close(a, r, **TOLERANCES[torch.float32])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("batch", [5, 37], ids=["B5", "B37"])
def test_unrolled_gradients(batch, device):
    # Steps chained as in training: each step's old_h gradient (a transposed view) and old_cell
    # gradient are the previous step's output gradients; the last cell state's is absent.
    torch.manual_seed(4)
    steps, i, s = 4, 3, 7
    params = make_args(batch, i, s, torch.float64, device, seed=19, requires_grad=True)[1:3]
    sequence = torch.randn(steps, batch, i, dtype=torch.float64, device=device, requires_grad=True)
    state = torch.randn(2, batch, s, dtype=torch.float64, device=device, requires_grad=True)

    def unrolled(cell, weights, bias, sequence, state):
        h, c = state.unbind(0)
        for x in sequence.unbind(0):
            h, c = cell(x, weights, bias, h, c)
        return (h * h).sum()

    inputs = [*params, sequence, state]
    grads = torch.autograd.grad(unrolled(lltm, *inputs), inputs)
    ref_inputs = float64(inputs, requires_grad=True)
    ref_grads = torch.autograd.grad(unrolled(lltm_ref, *ref_inputs), ref_inputs)
    for a, r in zip(grads, ref_grads):
        close(a, r, torch.float64)


@pytest.mark.parametrize("device", DEVICES)
def test_empty_batch(device):
    args = make_args(0, 3, 5, torch.float32, device, seed=14, requires_grad=True)
    new_h, new_cell = lltm(*args)
    assert new_h.shape == new_cell.shape == (0, 5)
    (new_h.sum() + new_cell.sum()).backward()
    assert (args[1].grad == 0).all() and (args[2].grad == 0).all()
    assert args[0].grad.shape == (0, 3)


@pytest.mark.parametrize("device", DEVICES)
def test_no_grad_saves_nothing(device):
    args = make_args(2, 3, 4, torch.float32, device, seed=15, requires_grad=True)
    with torch.no_grad():
        new_h, new_cell = lltm(*args)
    assert new_h.grad_fn is None and not new_h.requires_grad
    with torch.inference_mode():
        new_h, _ = lltm(*args)
    assert new_h.is_inference()


def test_meta_shapes():
    args = [t.to("meta") for t in make_args(3, 4, 5)]
    new_h, new_cell, gates, x = lltm_forward(*args)
    assert new_h.shape == new_cell.shape == (3, 5) and gates.shape == (15, 3) and x.shape == (3, 9)
    kept = [gates, x, args[1], args[2], args[4]]
    grads = lltm_backward(new_h, None, *kept, [True] * 5)
    assert [g.shape for g in grads] == [(3, 9), (15, 9), (15,), (3, 5)]
    assert grads[0].stride() == (1, 3)   # the transposed [S + I, B] product
    (grad_input,) = lltm_backward(None, new_cell, *kept, [True, False, False, False, False])
    assert grad_input.shape == (3, 4) and grad_input.stride() == (1, 3)


NEEDS = [[True] * 5, [False, True, True, False, False], [True, False, False, False, True],
         [False, False, False, True, False], [True, True, False, True, False]]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("batch", [6, 40], ids=["B6", "B40"])   # the bias's sum: in block, apart
def test_forward_and_backward_ops(batch, device):
    # The private ops on their own: what the forward keeps (x = cat([old_h, input], 1) and the
    # gates' linear term), and the backward's gradients from it, for several sets of needed ones,
    # with an output's gradient absent (zero) or given as a transposed or expanded view.
    args = make_args(batch, 3, 10, torch.float64, device, seed=17)
    new_h, new_cell, gates, x = lltm_forward(*args)
    ref_args = float64(args, requires_grad=True)
    inp, w, bias, h, c = (a.detach() for a in ref_args)
    close(x, torch.cat([h, inp], 1), torch.float64)
    close(gates, w @ torch.cat([h, inp], 1).t(), torch.float64)
    ref = lltm_ref(*ref_args)
    g = torch.Generator().manual_seed(5)
    grad_h, grad_cell = (torch.randn(batch, 10, generator=g, dtype=torch.float64) for _ in range(2))
    expanded = torch.tensor(0.5, dtype=torch.float64).expand(batch, 10)
    layouts = [(grad_h, grad_cell), (grad_h, None), (None, grad_cell),
               (grad_h.t().contiguous().t(), expanded)]
    for needs in NEEDS:
        for given in layouts:
            used = [(r, gr) for r, gr in zip(ref, given) if gr is not None]
            expected = torch.autograd.grad([r for r, _ in used], ref_args, [gr for _, gr in used],
                                           retain_graph=True)
            on_device = [None if gr is None else gr.to(device) for gr in given]
            got = iter(lltm_backward(*on_device, gates, x, args[1], args[2], args[4], needs))
            if needs[0] or needs[3]:   # old_h's columns, then input's
                columns = [expected[k] for k in (3, 0) if needs[k]]
                close(next(got), torch.cat(columns, 1), torch.float64)
            for k in (1, 2, 4):
                if needs[k]:
                    close(next(got), expected[k], torch.float64)
            assert next(got, None) is None, needs


@pytest.mark.parametrize("device", DEVICES)
def test_only_needed_gradients(device):
    # A recurrent cell's input is data: its gradient (a matrix product) is not computed.
    args = make_args(4, 3, 5, torch.float64, device, seed=18)
    for needed in ([1, 2], [0], [3], [0, 3], [4]):
        inputs = [a.clone().requires_grad_(k in needed) for k, a in enumerate(args)]
        grads = torch.autograd.grad(sum(o.sum() for o in lltm(*inputs)),
                                    [inputs[k] for k in needed])
        ref_inputs = float64(inputs, requires_grad=True)
        ref_grads = torch.autograd.grad(sum(o.sum() for o in lltm_ref(*ref_inputs)),
                                        [ref_inputs[k] for k in needed])
        for a, r in zip(grads, ref_grads):
            close(a, r, torch.float64)


# ---------------------------------------------------------------------------------------------
# The registered ops under PyTorch's tools.

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_opcheck(dtype, device):
    args = make_args(3, 4, 5, dtype, device, seed=16, requires_grad=True)
    torch.library.opcheck(lltm, args)
    torch.library.opcheck(lltm_forward, args)
    new_h, new_cell, gates, x = lltm_forward(*[a.detach() for a in args])
    kept = [gates, x, args[1].detach(), args[2].detach(), args[4].detach()]
    for grads, needs in [((torch.randn_like(new_h), torch.randn_like(new_cell)), [True] * 5),
                         ((None, torch.randn_like(new_cell)), [False, True, True, False, False])]:
        torch.library.opcheck(lltm_backward, [*grads, *kept, needs])


class Unrolled(torch.nn.Module):
    """A few LLTM steps over a sequence [T, B, I] and a linear read-out."""

    def __init__(self, input_features: int = 4, state_size: int = 8):
        super().__init__()
        self.cell = gpuaug.nn.LLTM(input_features, state_size)
        self.readout = torch.nn.Linear(state_size, 1)

    def forward(self, sequence: torch.Tensor) -> torch.Tensor:
        state_size = self.cell.state_size
        h = sequence.new_zeros(sequence.shape[1], state_size)
        c = sequence.new_zeros(sequence.shape[1], state_size)
        for x in sequence.unbind(0):
            h, c = self.cell(x, (h, c))
        return self.readout(h)


def parameter_grads(model):
    return [p.grad.clone() for p in model.parameters()]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")   # raised inside Inductor
@pytest.mark.parametrize("device", DEVICES)
def test_compile_dynamic_batch(device, fresh_dynamo):
    torch.manual_seed(1)
    model = Unrolled().to(device)
    counter = torch._dynamo.testing.CompileCounterWithBackend("inductor")
    compiled = torch.compile(model, backend=counter, fullgraph=True, dynamic=True)
    for batch in (3, 5, 9):
        sequence = torch.randn(4, batch, 4, device=device)
        model.zero_grad()
        expected = model(sequence)
        expected.sum().backward()
        eager_grads = parameter_grads(model)
        model.zero_grad()
        out = compiled(sequence)
        out.sum().backward()
        torch.testing.assert_close(out, expected)
        for a, e in zip(parameter_grads(model), eager_grads):
            torch.testing.assert_close(a, e)
    assert counter.frame_count == 1, "a new batch size must not recompile"


@pytest.mark.parametrize("device", DEVICES)
def test_export_dynamic_batch(device):
    model = Unrolled().to(device)
    sequence = torch.randn(3, 4, 4, device=device)
    batch = torch.export.Dim("batch", min=2)
    program = torch.export.export(model, (sequence,), dynamic_shapes=({1: batch},))
    assert torch.ops.gpuaug.lltm.default in {n.target for n in program.graph.nodes}
    for b in (4, 7):
        sequence = torch.randn(3, b, 4, device=device)
        torch.testing.assert_close(program.module()(sequence), model(sequence))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")   # TorchScript is deprecated
@pytest.mark.parametrize("device", DEVICES)
def test_torchscript_save_load(device):
    model = Unrolled().to(device)
    buffer = io.BytesIO()
    torch.jit.save(torch.jit.script(model), buffer)
    buffer.seek(0)
    loaded = torch.jit.load(buffer, map_location=device)
    assert "ops.gpuaug.lltm(" in loaded.cell.code
    sequence = torch.randn(5, 3, 4, device=device)
    torch.testing.assert_close(loaded(sequence), model(sequence), rtol=0, atol=0)


# ---------------------------------------------------------------------------------------------
# gpuaug.nn.LLTM

def test_module_parameters_and_init():
    torch.manual_seed(2)
    cell = gpuaug.nn.LLTM(5, 16)
    assert cell.weights.shape == (48, 21) and cell.bias.shape == (48,)
    bound = 1 / math.sqrt(16)
    for p in (cell.weights, cell.bias):
        assert p.abs().max() <= bound and p.abs().max() > 0.9 * bound
        assert p.min() < 0 < p.max()
    assert "input_features=5, state_size=16" in repr(cell)
    with pytest.raises(ValueError, match="positive"):
        gpuaug.nn.LLTM(0, 4)


@pytest.mark.parametrize("device", DEVICES)
def test_module_matches_functional(device):
    cell = gpuaug.nn.LLTM(3, 6, device=device, dtype=torch.float64)
    x, h, c = (torch.randn(2, n, dtype=torch.float64, device=device) for n in (3, 6, 6))
    out = cell(x, (h, c))
    ref = lltm_ref(x.cpu(), cell.weights.detach().cpu(), cell.bias.detach().cpu(), h.cpu(), c.cpu())
    for a, r in zip(out, ref):
        close(a, r, torch.float64)


# ---------------------------------------------------------------------------------------------
# CUDA graphs: a whole training step.

def training_step(model, optimizer, sequence, target):
    optimizer.zero_grad(set_to_none=False)
    loss = F.mse_loss(model(sequence), target)
    loss.backward()
    optimizer.step()
    return loss


@requires_cuda
def test_training_step_in_cuda_graph():
    torch.manual_seed(3)
    graphed_model = Unrolled().cuda()
    eager_model = Unrolled().cuda()
    eager_model.load_state_dict(graphed_model.state_dict())
    data = [(torch.randn(6, 16, 4, device="cuda"), torch.randn(16, 1, device="cuda"))
            for _ in range(8)]

    optimizer = torch.optim.SGD(graphed_model.parameters(), lr=0.1, momentum=0.9)
    static_sequence, static_target = (t.clone() for t in data[0])
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):   # warm-up steps outside the capture (they train too)
        for sequence, target in data[:3]:
            static_sequence.copy_(sequence)
            static_target.copy_(target)
            training_step(graphed_model, optimizer, static_sequence, static_target)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_loss = training_step(graphed_model, optimizer, static_sequence, static_target)
    losses = []
    for sequence, target in data[3:]:
        static_sequence.copy_(sequence)
        static_target.copy_(target)
        graph.replay()
        losses.append(static_loss.item())

    eager_optimizer = torch.optim.SGD(eager_model.parameters(), lr=0.1, momentum=0.9)
    eager_losses = [training_step(eager_model, eager_optimizer, s, t).item() for s, t in data]
    assert losses == pytest.approx(eager_losses[3:], rel=1e-5)
    for a, e in zip(graphed_model.parameters(), eager_model.parameters()):
        torch.testing.assert_close(a, e, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# Bad input.

def bad_calls():
    b, i, s = 2, 3, 4
    good = make_args(b, i, s)
    x, w, bias, h, c = good

    def replace(index, value):
        args = list(good)
        args[index] = value
        return args

    return [
        ("integer input", replace(0, x.long()),
         "expected argument 'input' to have a floating dtype"),
        ("mixed dtypes", replace(1, w.double()),
         "expected 'weights' to have the dtype of 'input' (Float), but got Double"),
        ("input not a matrix", replace(0, x[0]), "expected 'input' of shape [B, I], but got shape [3]"),
        ("old_h not a matrix", replace(3, h[None]),
         "expected 'old_h' of shape [B, S], but got shape [1, 2, 4]"),
        ("batch mismatch", replace(3, torch.randn(3, s)),
         "expected 'old_h' of shape [B, S] = [2, 4] (B = 2 from 'input'"),
        ("old_cell of another S", replace(4, torch.randn(b, s + 1)),
         "expected 'old_cell' of shape [B, S] = [2, 4]"),
        ("weights not [3S, S + I]", replace(1, torch.randn(3 * s, s + i + 1)),
         "expected 'weights' of shape [3 * S, S + I] = [12, 7] (B = 2 from 'input', I = 3 from "
         "'input', S = 4 from 'old_h'), but got [12, 8]"),
        ("weights transposed", replace(1, w.t()),
         "expected 'weights' of shape [3 * S, S + I] = [12, 7]"),
        ("wrong bias length", replace(2, torch.randn(3 * s - 1)),
         "expected 'bias' of shape [3 * S] = [12]"),
        ("bias as a matrix", replace(2, bias[None]), "expected 'bias' of shape [3 * S] = [12]"),
    ]


@pytest.mark.parametrize("name,args,message", bad_calls(), ids=[c[0] for c in bad_calls()])
def test_bad_inputs(name, args, message):
    with pytest.raises(RuntimeError, match=re.escape("gpuaug::lltm: " + message)):
        lltm(*args)


@requires_cuda
def test_mixed_devices():
    args = make_args(2, 3, 4)
    args[3] = args[3].cuda()
    with pytest.raises(RuntimeError, match=re.escape(
            "gpuaug::lltm: expected 'old_h' on the device of 'input' (cpu), but got cuda:0")):
        lltm(*args)


def test_python_wrapper_type_error():
    args = make_args(2, 3, 4)
    with pytest.raises(TypeError, match="gpuaug.lltm: expected 'bias' to be a torch.Tensor"):
        gpuaug.lltm(args[0], args[1], [0.0] * 12, args[3], args[4])


def test_backward_op_checks_its_arguments():
    args = make_args(2, 3, 4)
    new_h, new_cell, gates, x = lltm_forward(*args)
    weights, bias, old_cell = args[1], args[2], args[4]
    needs = [True] * 5
    with pytest.raises(RuntimeError, match=re.escape(
            "gpuaug::_lltm_backward: expected 'grad_cell' of shape [B, S] = [2, 4] (B = 2, S = 4 "
            "from 'old_cell'), but got [2, 3]")):
        lltm_backward(new_h, new_cell[:, :3], gates, x, weights, bias, old_cell, needs)
    with pytest.raises(RuntimeError, match=re.escape(
            "gpuaug::_lltm_backward: expected 'gates' of shape [3 * S, B] = [12, 2]")):
        lltm_backward(new_h, new_cell, gates.t(), x, weights, bias, old_cell, needs)
    with pytest.raises(RuntimeError, match=re.escape(
            "gpuaug::_lltm_backward: expected 'x' of shape [B, S + I] with S = 4 from 'old_cell', "
            "but got [2, 3]")):
        lltm_backward(new_h, new_cell, gates, x[:, :3], weights, bias, old_cell, needs)
    with pytest.raises(RuntimeError, match=re.escape(
            "gpuaug::_lltm_backward: expected 'weights' of shape [3 * S, S + I] = [12, 7]")):
        lltm_backward(new_h, new_cell, gates, x, weights[:, :6], bias, old_cell, needs)
