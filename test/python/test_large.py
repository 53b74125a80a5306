"""Every op beyond 2^31 elements on the GPU, forward and backward, against the same op (or the
float64 reference) run on pieces small enough for 32-bit indices: a kernel that truncates an
index or an offset to 32 bits reads or writes the wrong place past 2^31 and fails here. Each test
needs tens of GiB of free GPU memory (an H100 has enough) and is skipped otherwise."""
import pytest
import torch

import gpuaug
from gpuaug_testing import mul_ref, relu_grad_ref, relu_ref, requires_cuda, round_ste_ref

pytestmark = requires_cuda
ops = torch.ops.gpuaug

N = (1 << 31) + 1029       # elements: past 2^31, and not a multiple of any vector width
CHUNK = 1 << 27


@pytest.fixture(autouse=True)
def free_memory():
    yield
    torch.cuda.empty_cache()


def needs_gib(gib):
    torch.cuda.empty_cache()
    if torch.cuda.mem_get_info()[0] < gib * 2**30:
        pytest.skip(f"needs {gib} GiB of free GPU memory")


def randn(shape, dtype=torch.float16, seed=0, scale=4.0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.randn(shape, generator=g, device="cuda", dtype=torch.float32) * scale).to(dtype)


def assert_equal_by_chunks(name, out, ref_of_slice, length, step=CHUNK):
    for start in range(0, length, step):
        part = slice(start, min(start + step, length))
        assert torch.equal(out[part], ref_of_slice(part)), f"{name}: wrong in [{start}, +{step})"


def test_unary_forward_and_backward():
    needs_gib(14)
    x = randn(N, seed=1)
    grad = randn(N, seed=2)
    for name, out, ref in [
        ("relu", ops.relu(x), lambda p: relu_ref(x[p])),
        ("_relu_backward", ops._relu_backward(grad, x), lambda p: relu_grad_ref(grad[p], x[p])),
        ("round_ste", ops.round_ste(x), lambda p: round_ste_ref(x[p])),
    ]:
        assert out.shape == (N,)
        assert_equal_by_chunks(name, out, ref, N)
        del out
    # The straight-through gradient, through autograd.
    leaf = x.requires_grad_()
    (got,) = torch.autograd.grad(ops.round_ste(leaf), leaf, grad)
    assert torch.equal(got, grad)
    del got
    # Misaligned by one element: the kernels' element-at-a-time path.
    out = ops.relu(x.detach()[1:])
    assert_equal_by_chunks("relu (misaligned)", out, lambda p: relu_ref(x.detach()[1:][p]), N - 1)


def test_mul_forward_and_backward():
    needs_gib(22)
    a, b, grad = randn(N, seed=3), randn(N, seed=4), randn(N, seed=5)
    out = ops.mul(a, b)
    assert_equal_by_chunks("mul", out, lambda p: mul_ref(a[p], b[p]), N)
    del out
    grad_a, grad_b = ops._mul_backward(grad, a, b)
    assert_equal_by_chunks("mul grad a", grad_a, lambda p: mul_ref(grad[p], b[p]), N)
    assert_equal_by_chunks("mul grad b", grad_b, lambda p: mul_ref(grad[p], a[p]), N)


def test_mul_strided_and_broadcast_reduction():
    # Every other column of rows of 2048: byte offsets past 2^32 with fewer than 2^31 elements;
    # a row broadcast against them, whose gradient sums over all the rows.
    needs_gib(20)
    rows = N // 2048
    base = randn((rows, 2048), dtype=torch.float32, seed=6)
    x = base[:, ::2]
    row = randn((1, 1024), dtype=torch.float32, seed=7).requires_grad_()
    out = ops.mul(x, row)
    step = CHUNK // 2048
    assert_equal_by_chunks("strided mul", out, lambda p: mul_ref(x[p], row.detach()), rows, step)
    grad = randn(out.shape, dtype=torch.float32, seed=8)
    del out
    (grad_row,) = torch.autograd.grad(ops.mul(x, row), row, grad)
    expected = sum(((grad[p].double() * x[p].double()).sum(0, keepdim=True)
                    for p in (slice(s, s + step) for s in range(0, rows, step))))
    torch.testing.assert_close(grad_row.double(), expected, rtol=1e-4, atol=1e-2)


def test_jit_elementwise_forward_and_backward():
    needs_gib(22)
    fma = gpuaug.jit.elementwise("large_fma", "x * y + y", inputs=("x", "y"),
                                 grads=("grad * y", "grad * (x + 1)"))
    x, y = randn(N, seed=9).requires_grad_(), randn(N, seed=10).requires_grad_()
    out = fma(x, y)
    xd, yd = x.detach(), y.detach()
    # float32 arithmetic rounded once to half, as the kernel does.
    ref = lambda p: (xd[p].float() * yd[p].float() + yd[p].float()).half()   # noqa: E731
    assert_equal_by_chunks("jit fma", out, ref, N)
    grad = randn(N, seed=11)
    grad_x, grad_y = torch.autograd.grad(out, (x, y), grad)
    del out
    assert_equal_by_chunks("jit grad x", grad_x, lambda p: (grad[p].float() * yd[p].float()).half(), N)
    del grad_x
    assert_equal_by_chunks(
        "jit grad y", grad_y, lambda p: (grad[p].float() * (xd[p].float() + 1)).half(), N)


def color_params(samples=None, seed=12):
    g = torch.Generator(device="cuda").manual_seed(seed)
    lead = () if samples is None else (samples,)
    u = lambda *s: torch.rand((*lead, *s), generator=g, device="cuda")   # noqa: E731
    return dict(color=(0.6 + 0.8 * u(3)).requires_grad_(), brightness=(0.2 * u() - 0.1).requires_grad_(),
                contrast=(0.6 + 0.8 * u()).requires_grad_(), gamma=(0.5 + u()).requires_grad_())


def detached(params):
    return {k: v.detach() for k, v in params.items()}


def random_image(shape, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randint(0, 256, shape, generator=g, device="cuda", dtype=torch.uint8)


def transform_by_rows(image, rows, **kwargs):
    """The op on pieces of `rows` rows, each a tensor of its own."""
    return [(p, gpuaug.color_transform(image[..., p, :].contiguous(
        memory_format=suggested_format(image)), **kwargs))
        for p in (slice(r, r + rows) for r in range(0, image.shape[-2], rows))]


def suggested_format(image):
    cl = image.dim() == 4 and image.is_contiguous(memory_format=torch.channels_last)
    return torch.channels_last if cl else torch.contiguous_format


# One uint8 image of more than 2^31 bytes forward, and its pixels in float16 backward (gradients
# need a floating image), whose per-sample sums run over more than 2^31 elements: pixels a multiple of 16 with pieces of 2048 rows (the vectorised kernels), or
# an odd number of pixels with pieces of an odd number of pixels (the per-pixel kernels); the two
# may differ by a level in uint8, so each is compared with itself.
@pytest.mark.parametrize("shape, rows", [((3, 26752, 26768), 2048), ((3, 26755, 26757), 1911)])
def test_color_transform_uint8_image_past_2_31_bytes(shape, rows):
    needs_gib(32)
    image = random_image(shape, seed=13)
    assert image.numel() > 2**31
    params = color_params()
    out = gpuaug.color_transform(image, **detached(params))
    for p, expected in transform_by_rows(image, rows, **detached(params)):
        assert torch.equal(out[:, p], expected), f"uint8 forward: wrong in rows {p}"
    del out, expected

    # Backward to the parameters, which needs a floating image: the same pixels in float16 (more
    # than 2^31 elements) to a float16 output, every pixel's contribution summed.
    image = image.to(torch.float16).div_(255)
    out = gpuaug.color_transform(image, **params, dtype=torch.float16)
    grad = randn(shape, seed=14, scale=1.0)
    got = torch.autograd.grad(out, list(params.values()), grad)
    expected = [torch.zeros_like(v, dtype=torch.float64) for v in params.values()]
    for p in (slice(r, r + rows) for r in range(0, shape[1], rows)):
        piece_out = gpuaug.color_transform(image[:, p].contiguous(), **params, dtype=torch.float16)
        assert torch.equal(out[:, p], piece_out), f"float16 forward: wrong in rows {p}"
        for e, g in zip(expected, torch.autograd.grad(piece_out, list(params.values()),
                                                      grad[:, p].contiguous())):
            e += g.double()
    for name, g, e in zip(params, got, expected):
        # Sums of 2^31 terms, in float32 partial sums of other lengths.
        torch.testing.assert_close(g.double(), e, rtol=1e-3, atol=1.0, msg=f"grad of {name}")


def test_color_transform_channels_last_image_past_2_32_bytes():
    # Interleaved channels: a group's byte offset within one image passes 2^32.
    needs_gib(12)
    image = random_image((1, 3, 37840, 37840), seed=17).contiguous(memory_format=torch.channels_last)
    assert image.numel() > 2**32
    params = detached(color_params())
    out = gpuaug.color_transform(image, **params)
    assert out.is_contiguous(memory_format=torch.channels_last)
    for p, expected in transform_by_rows(image, 2048, **params):
        assert torch.equal(out[..., p, :], expected), f"rows {p}"


def test_color_transform_batch_past_2_31_bytes():
    # 683 samples of 3 x 1024 x 1024, each with its own parameters, into normalised float16.
    needs_gib(20)
    shape = (683, 3, 1024, 1024)
    image = random_image(shape, seed=15)
    params = detached(color_params(samples=shape[0], seed=16))
    norm = dict(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    out = gpuaug.color_transform(image, **params, dtype=torch.float16, **norm)
    for start in range(0, shape[0], 64):
        p = slice(start, start + 64)
        expected = gpuaug.color_transform(image[p], **{k: v[p] for k, v in params.items()},
                                          dtype=torch.float16, **norm)
        assert torch.equal(out[p], expected), f"samples [{start}, +64)"


def test_lltm_past_2_31_elements():
    # B * S past 2^31 in float16 (gates: 3 * B * S elements); gradients of everything but the
    # input, against the same op run on slices of the batch.
    needs_gib(64)
    b, i, s = (1 << 21) + 3, 5, 1024
    args = [randn((b, i), seed=17, scale=1.0), randn((3 * s, s + i), seed=18, scale=0.03),
            randn((3 * s,), seed=19, scale=0.1), randn((b, s), seed=20, scale=1.0),
            randn((b, s), seed=21, scale=1.0)]
    params = [a.requires_grad_() for a in args[1:]]
    new_h, new_cell = ops.lltm(*args)
    assert new_h.numel() > 2**31
    grad_h = randn((b, s), seed=22, scale=1.0)
    got = torch.autograd.grad(new_h, params, grad_h)
    step = 1 << 17
    expected_params = [torch.zeros_like(w, dtype=torch.float64) for w in params[:2]]
    for start in range(0, b, step):
        p = slice(start, start + step)
        piece_state = [params[2][p].detach().requires_grad_(), params[3][p].detach().requires_grad_()]
        h, c = ops.lltm(args[0][p], params[0], params[1], *piece_state)
        # cuBLAS may sum the 1029 products of a gate in another order for another batch size.
        torch.testing.assert_close(new_h[p], h, rtol=2e-3, atol=2e-3)
        torch.testing.assert_close(new_cell[p], c, rtol=2e-3, atol=2e-3)
        grads = torch.autograd.grad(h, [params[0], params[1], *piece_state], grad_h[p])
        for e, g in zip(expected_params, grads):
            e += g.double()
        for name, full, piece in zip(["old_h", "old_cell"], got[2:], grads[2:]):
            torch.testing.assert_close(full[p], piece, rtol=2e-3, atol=2e-3,
                                       msg=f"grad of {name}, samples [{start}, +{step})")
    # Sums over 2^21 samples in float32, rounded to float16 once (pieces: each rounded).
    for name, g, e in zip(["weights", "bias"], got[:2], expected_params):
        torch.testing.assert_close(g.double(), e, rtol=1e-2, atol=1.0, msg=f"grad of {name}")
