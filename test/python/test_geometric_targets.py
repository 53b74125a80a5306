"""The boxes, masks and key points of the geometric transforms' samples: each sample's against
torchvision.transforms.v2's transform of the same arguments applying the sample's parameters
(read from sample_params) to that one sample's targets, in every box format; which draw a
target follows (a single image's, a video's, element i of a batch's list); the errors."""

import pytest
import torch
from torch.utils import _pytree as pytree

from gpuaug import transforms as T
from geometric_testing import F, make_images
from gpuaug_testing import requires_cuda

pytestmark = pytest.mark.skipif(F is None, reason="torchvision is not installed")

if F is not None:
    from torchvision import tv_tensors
    from torchvision.transforms import v2

    FORMATS = [f for f in tv_tensors.BoundingBoxFormat
               if not tv_tensors.is_rotated_bounding_format(f)]
    # torchvision's clamping of rotated boxes is slow on the CPU: a test of their own, on one
    # thread
    ROTATED = [f for f in tv_tensors.BoundingBoxFormat if tv_tensors.is_rotated_bounding_format(f)]

SIZE = (20, 24)
COUNT = 4

# name: (class, args, kwargs), made of gpuaug.transforms and of torchvision.transforms.v2 alike
CASES = {
    "RandomResizedCrop": ("RandomResizedCrop", ([10, 12],), {}),
    "RandomResizedCrop nearest": ("RandomResizedCrop", (16,), {"interpolation": 0,
                                                              "scale": (0.5, 1.0)}),
    "RandomHorizontalFlip": ("RandomHorizontalFlip", (), {}),
    "RandomVerticalFlip": ("RandomVerticalFlip", (), {}),
    "Resize": ("Resize", (15,), {}),
    "Resize (h, w)": ("Resize", ([31, 13],), {"interpolation": "nearest-exact"}),
    "Resize max_size": ("Resize", (12,), {"max_size": 14}),
    "CenterCrop": ("CenterCrop", ([14, 18],), {}),
    "CenterCrop larger": ("CenterCrop", ([23, 27],), {}),
    "CenterCrop larger, even": ("CenterCrop", ([26, 29],), {}),
    "RandomCrop": ("RandomCrop", (16,), {}),
    "RandomCrop padding pad_if_needed": ("RandomCrop", ([24, 30],),
                                         {"padding": [1, 2], "pad_if_needed": True, "fill": 7}),
    "RandomCrop edge": ("RandomCrop", (18,), {"padding": 2, "padding_mode": "edge"}),
    "Pad constant": ("Pad", ([1, 2, 3, 4],), {"fill": 3}),
    "Pad edge": ("Pad", (2,), {"padding_mode": "edge"}),
    "Pad reflect": ("Pad", ([3, 1],), {"padding_mode": "reflect"}),
    "Pad symmetric": ("Pad", ([1, 2, 3, 4],), {"padding_mode": "symmetric"}),
}

# name: (the transforms, the calls of augment they make of an image batch)
COMPOSES = {
    # one call: the crop, the flip and the jitter
    "RandomResizedCrop, flip, ColorJitter": (1, [
        ("RandomResizedCrop", ([12, 14],), {}), ("RandomHorizontalFlip", (), {}),
        ("ColorJitter", (0.4, 0.4, 0.4, 0.1), {})]),
    # a call a run of geometric transforms, and another for the constant pad after the crop
    "several calls": (3, [
        ("Resize", (18,), {}), ("RandomVerticalFlip", (), {}),
        ("ColorJitter", (0.4,), {}), ("RandomResizedCrop", (12,), {"scale": (0.3, 1.0)}),
        ("RandomHorizontalFlip", (), {}), ("CenterCrop", (15,), {}),
        ("Pad", (2,), {"fill": 1}), ("RandomCrop", (16,), {})]),
}


def made(module, case):
    name, args, kwargs = case
    return getattr(module, name)(*args, **kwargs)


def make_boxes(fmt, dtype, canvas=SIZE, seed=0, count=6):
    """Boxes inside and across the canvas' edges, in ``fmt`` (rotated ones at an angle)."""
    g = torch.Generator().manual_seed(seed)
    h, w = canvas
    corners = torch.rand([count, 2, 2], generator=g) * torch.tensor([w + 8.0, h + 8.0]) - 4
    # (elementwise: a reduction over a dimension wakes every CPU thread, slow on a small box)
    xyxy = torch.cat([torch.minimum(corners[:, 0], corners[:, 1]),
                      torch.maximum(corners[:, 0], corners[:, 1])], 1)
    if tv_tensors.is_rotated_bounding_format(fmt):
        cxcywh = F.convert_bounding_box_format(xyxy, old_format="XYXY", new_format="CXCYWH")
        angles = torch.rand([count, 1], generator=g) * 90 - 45
        boxes = F.convert_bounding_box_format(torch.cat([cxcywh, angles], 1),
                                              old_format="CXCYWHR", new_format=fmt)
    else:
        boxes = F.convert_bounding_box_format(xyxy, old_format="XYXY", new_format=fmt)
    if not dtype.is_floating_point:
        boxes = boxes.round()
    return tv_tensors.BoundingBoxes(boxes.to(dtype), format=fmt, canvas_size=canvas)


def make_key_points(canvas=SIZE, seed=0):
    g = torch.Generator().manual_seed(seed)
    h, w = canvas
    points = torch.rand([3, 2, 2], generator=g) * torch.tensor([w + 4.0, h + 4.0]) - 2
    return tv_tensors.KeyPoints(points, canvas_size=canvas)


def make_masks(canvas=SIZE, seed=0):
    """A mask of each dtype: uint8 [H, W], bool [K, H, W], int64 labels [1, H, W]."""
    g = torch.Generator().manual_seed(seed)
    h, w = canvas
    return [tv_tensors.Mask(torch.randint(0, 256, [h, w], generator=g, dtype=torch.uint8)),
            tv_tensors.Mask(torch.rand([3, h, w], generator=g) < 0.5),
            tv_tensors.Mask(torch.randint(-5, 1000, [1, h, w], generator=g))]


def make_targets(canvas=SIZE, seed=0):
    """Every target of one sample: boxes of every unrotated format (float32 and int64), key
    points, masks, a label."""
    boxes = [make_boxes(fmt, dtype, canvas, seed + k)
             for k, fmt in enumerate(FORMATS) for dtype in (torch.float32, torch.int64)]
    return {"boxes": boxes, "points": make_key_points(canvas, seed), "masks": make_masks(canvas,
                                                                                          seed),
            "label": 7}


def moves_points(transform_case):
    """Whether torchvision moves boxes and key points through it (it pads them with constant
    alone)."""
    return transform_case[2].get("padding_mode", "constant") == "constant"


def torchvision_targets(cases, params, target, i):
    """Sample i's target through torchvision's transforms of ``cases`` with its parameters,
    ``params`` a dict of sample_params a case (None: a photometric one, which leaves it)."""
    for case, p in zip(cases, params):
        if p is None:
            continue
        tv = made(v2, case)
        row = {key: value[i].item() for key, value in p.items()}
        if "apply" in row:  # a flip: its coin
            if row["apply"]:
                target = tv.transform(target, {})
            continue
        tv_params = tv.make_params([target])  # RandomCrop's pad and needs_crop, say
        tv_params.update(row)
        target = tv.transform(target, tv_params)
    return target


def assert_same_target(actual, expected, what):
    assert type(actual) is type(expected), (what, type(actual), type(expected))
    assert actual.dtype == expected.dtype, (what, actual.dtype, expected.dtype)
    if isinstance(expected, tv_tensors.BoundingBoxes):
        assert actual.format == expected.format, what
        assert actual.clamping_mode == expected.clamping_mode, what
    if not isinstance(expected, tv_tensors.Mask):
        assert tuple(actual.canvas_size) == tuple(expected.canvas_size), (
            what, actual.canvas_size, expected.canvas_size)
    torch.testing.assert_close(actual.as_subclass(torch.Tensor),
                               expected.as_subclass(torch.Tensor), rtol=0, atol=0, msg=what)


def check_batch(cases, transform_params, targets, out_targets, points=True):
    for i in range(len(targets)):
        pairs = [(f"mask {k}", m, o) for k, (m, o) in enumerate(zip(targets[i]["masks"],
                                                                    out_targets[i]["masks"]))]
        if points:
            pairs += [(f"boxes {b.format.name} {b.dtype}", b, o)
                      for b, o in zip(targets[i]["boxes"], out_targets[i]["boxes"])]
            pairs.append(("key points", targets[i]["points"], out_targets[i]["points"]))
        for what, target, out in pairs:
            expected = torchvision_targets(cases, transform_params, target, i)
            assert_same_target(out, expected, f"sample {i} {what}")
        assert out_targets[i]["label"] == 7


@pytest.mark.parametrize("name", list(CASES))
def test_transform_targets(name):
    """A batch with a list of targets: sample i's follow draw i, as torchvision's transform with
    that sample's parameters moves them; the images as the transform makes them alone."""
    case = CASES[name]
    transform = made(T, case)
    images = make_images([COUNT, 3, *SIZE], torch.uint8, seed=len(name))
    targets = [make_targets(seed=20 * i) for i in range(COUNT)]
    if not moves_points(case):
        targets = [{"masks": t["masks"], "label": t["label"]} for t in targets]
    params = transform.sample_params(images)
    out, out_targets = transform(images, targets, params=params)
    assert torch.equal(out, transform(images, params))
    check_batch([case], [params], targets, out_targets, moves_points(case))
    # fresh draws: the targets follow the images' own draws
    transform.generator = torch.Generator().manual_seed(3)
    fresh, fresh_targets = transform(images, targets)
    transform.generator = torch.Generator().manual_seed(3)
    drawn = transform.sample_params(images)
    assert torch.equal(fresh, transform(images, drawn))
    check_batch([case], [drawn], targets, fresh_targets, moves_points(case))


@pytest.mark.parametrize("name", list(COMPOSES))
def test_compose_targets(name, monkeypatch):
    """A Compose's targets follow every geometric transform's draw in order, through each call
    of the op it makes; its photometric transforms leave them alone."""
    calls, cases = COMPOSES[name]
    compose = T.Compose([made(T, case) for case in cases])
    images = tv_tensors.Image(make_images([COUNT, 3, *SIZE], torch.uint8, seed=11))
    targets = [make_targets(seed=7 * i + 1) for i in range(COUNT)]
    params = compose.sample_params(images)
    out = compose({"images": images, "targets": targets}, params)
    assert isinstance(out["images"], tv_tensors.Image)
    made_calls = []
    augment = torch.ops.gpuaug.augment
    monkeypatch.setattr(torch.ops.gpuaug, "augment",
                        lambda *args, **kwargs: made_calls.append(1) or augment(*args, **kwargs))
    assert torch.equal(out["images"], compose(images.as_subclass(torch.Tensor), params))
    assert len(made_calls) == calls
    picked = [None if case[0] == "ColorJitter" else
              {k.split(".", 1)[1]: v for k, v in params.items() if k.startswith(f"{j}.")}
              for j, case in enumerate(cases)]
    check_batch(cases, picked, targets, out["targets"])


@pytest.mark.parametrize("kind", ["tensor", "Image", "PIL"])
def test_single_image_one_draw(kind):
    """One image [C, H, W] (a tensor, an Image, a PIL image): its targets, given as they are or
    in lists, follow its one draw; replayed params move them too."""
    transform = T.Compose([T.RandomResizedCrop([10, 12]), T.RandomHorizontalFlip()])
    image = make_images([3, *SIZE], torch.uint8, seed=5)
    given = {"tensor": image, "Image": tv_tensors.Image(image),
             "PIL": F.to_pil_image(image)}[kind]
    target = make_targets(seed=3)
    params = transform.sample_params(image)
    out_image, out_target = transform((given, target), params)
    expected = transform(image, params)
    if kind == "PIL":
        out_image = F.pil_to_tensor(out_image)
    assert torch.equal(torch.as_tensor(out_image), expected)
    picked = [{k.split(".", 1)[1]: v for k, v in params.items() if k.startswith(f"{j}.")}
              for j in range(2)]
    cases = [("RandomResizedCrop", ([10, 12],), {}), ("RandomHorizontalFlip", (), {})]
    check_batch(cases, picked, [target], [out_target])


def test_videos_targets_follow_their_video():
    """A 4-D Video's targets (a mask of its frames) follow its one draw; a 5-D Video's, in a
    list of one a video, each its video's."""
    transform = T.RandomResizedCrop([10, 12])
    case = ("RandomResizedCrop", ([10, 12],), {})
    videos = make_images([2, 3, 3, *SIZE], torch.uint8, seed=9)
    frames = tv_tensors.Mask(torch.rand([3, *SIZE]) < 0.5)
    boxes = make_boxes("XYXY", torch.float32)
    params = transform.sample_params(videos[1, :1])
    out, (out_frames, out_boxes) = transform(tv_tensors.Video(videos[1]), (frames, boxes),
                                             params=params)
    assert isinstance(out, tv_tensors.Video) and out.shape == (3, 3, 10, 12)
    assert_same_target(out_frames, torchvision_targets([case], [params], frames, 0), "frames")
    assert_same_target(out_boxes, torchvision_targets([case], [params], boxes, 0), "boxes")
    params = transform.sample_params(videos[:, 0])
    masks = [tv_tensors.Mask(torch.rand([3, *SIZE]) < 0.5) for _ in range(2)]
    out, out_masks = transform(tv_tensors.Video(videos), masks, params=params)
    for v in range(2):
        assert_same_target(out_masks[v], torchvision_targets([case], [params], masks[v], v),
                           f"video {v}")


def test_list_of_images_of_different_sizes():
    """A list of images with a list of targets, each of its image's size: one batch, each
    sample's targets as torchvision moves them for that image."""
    transform = T.Compose([T.Resize(14), T.CenterCrop(12), T.RandomVerticalFlip()])
    cases = [("Resize", (14,), {}), ("CenterCrop", (12,), {}), ("RandomVerticalFlip", (), {})]
    sizes = [(20, 24), (17, 30), (26, 18)]
    images = [make_images([3, *size], torch.uint8, seed=k) for k, size in enumerate(sizes)]
    targets = [make_targets(size, seed=k) for k, size in enumerate(sizes)]
    params = transform.sample_params(images)
    out, out_targets = transform(images, targets, params=params)
    assert torch.equal(out, transform(images, params))
    picked = [{k.split(".", 1)[1]: v for k, v in params.items() if k.startswith(f"{j}.")}
              for j in range(3)]
    check_batch(cases, picked, targets, out_targets)


@pytest.fixture
def one_thread():
    # torchvision's clamping of rotated boxes makes hundreds of reductions of a few elements,
    # each waking every CPU thread
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_rotated_boxes(one_thread):
    """Rotated boxes, clamped and turned as torchvision's functions do."""
    cases = [("RandomResizedCrop", ([12, 14],), {}), ("RandomHorizontalFlip", (), {}),
             ("Pad", ([1, 2],), {})]
    compose = T.Compose([made(T, case) for case in cases])
    images = make_images([2, 3, *SIZE], torch.uint8, seed=12)
    boxes = [[make_boxes(fmt, torch.float32, seed=i, count=2) for fmt in ROTATED]
             for i in range(2)]
    params = compose.sample_params(images)
    _, out = compose(images, boxes, params=params)
    picked = [{k.split(".", 1)[1]: v for k, v in params.items() if k.startswith(f"{j}.")}
              for j in range(len(cases))]
    for i in range(2):
        for b, o in zip(boxes[i], out[i]):
            assert_same_target(o, torchvision_targets(cases, picked, b, i),
                               f"sample {i} {b.format.name}")


def test_clamping_mode_kept():
    """Boxes without clamping (clamping_mode=None) stay unclamped, as torchvision leaves them."""
    transform = T.RandomCrop(12)
    boxes = tv_tensors.BoundingBoxes([[-3.0, -2.0, 30.0, 25.0]], format="XYXY", canvas_size=SIZE,
                                     clamping_mode=None)
    image = make_images([3, *SIZE], torch.uint8)
    params = transform.sample_params(image)
    _, out = transform(image, boxes, params=params)
    expected = torchvision_targets([("RandomCrop", (12,), {})], [params], boxes, 0)
    assert_same_target(out, expected, "unclamped")
    assert out[0, 0] < 0


def test_photometric_transforms_leave_targets():
    image = tv_tensors.Image(make_images([3, *SIZE], torch.uint8))
    target = make_targets()
    out = T.ColorJitter(0.4, 0.4)(image, target)[1]
    assert all(a is b for a, b in zip(out["boxes"], target["boxes"]))
    assert out["masks"][0] is target["masks"][0]


def test_errors():
    batch = make_images([2, 3, *SIZE], torch.uint8)
    boxes = make_boxes("XYXY", torch.float32)
    mask = make_masks()[0]
    flip = T.RandomHorizontalFlip()
    with pytest.raises(TypeError, match=r"gpuaug.transforms.RandomHorizontalFlip: a batch of 2 "
                                        r"images takes its BoundingBoxes, Mask and KeyPoints in a "
                                        r"list or tuple of 2, .* got one BoundingBoxes beside the "
                                        r"batch"):
        flip(batch, {"boxes": boxes})
    with pytest.raises(TypeError, match=r"got one Mask beside the batch"):
        T.Compose([T.CenterCrop(8), T.RandomInvert()])(tv_tensors.Image(batch), mask)
    with pytest.raises(ValueError, match=r"list or tuple of 2, .* got a Mask in a list of 3"):
        flip(batch, [mask] * 3)
    with pytest.raises(ValueError, match=r"gpuaug.transforms.Resize: a BoundingBoxes follows its "
                                         r"image, so it must be of the image's size \(20, 24\) "
                                         r".*; got \(20, 25\)"):
        T.Resize(10)(batch[0], make_boxes("XYXY", torch.float32, canvas=(20, 25)))
    with pytest.raises(ValueError, match=r"a Mask follows its image, .* got \(21, 24\)"):
        flip(batch, [mask, tv_tensors.Mask(torch.zeros([21, 24]))])
    with pytest.raises(ValueError, match=r"gpuaug.transforms.Pad: padding_mode 'reflect' does not "
                                         r"move KeyPoints: torchvision pads boxes and key points "
                                         r"with padding_mode 'constant' alone"):
        T.Pad(2, padding_mode="reflect")(batch[0], make_key_points())
    with pytest.raises(ValueError, match=r"gpuaug.transforms.RandomCrop: a Mask is padded with one "
                                         r"value, as torchvision pads it: expected 'fill' as a "
                                         r"number for samples with masks, got \[1.0, 2.0, 3.0\]"):
        T.RandomCrop(22, pad_if_needed=True, fill=[1, 2, 3])(batch[0], mask)


# The warps: (the transform's arguments, its params' keys as torchvision's transform takes them)
WARPS = {
    "RandomAffine": ((25,), {"translate": (0.1, 0.2), "scale": (0.8, 1.2),
                             "shear": (-5, 5, -3, 3), "fill": 4}),
    "RandomRotation": ((40,), {"center": [5.0, 9.0]}),
    "RandomPerspective": ((0.5,), {"p": 0.75, "fill": 2}),
}


def torchvision_warp_row(params, i):
    row = {key: value[i].tolist() for key, value in params.items()}
    return row, row.pop("apply", True)


@pytest.mark.parametrize("name", list(WARPS))
def test_warp_targets(name):
    """RandomAffine's, RandomRotation's and RandomPerspective's samples: boxes, key points and
    masks (through the op's warp, nearest, with the transform's fill) as torchvision's transform
    moves them with each sample's parameters."""
    args, kwargs = WARPS[name]
    transform, tv = getattr(T, name)(*args, **kwargs), getattr(v2, name)(*args, **kwargs)
    images = make_images([COUNT, 3, *SIZE], torch.uint8, seed=len(name))
    targets = [make_targets(seed=30 * i + 2) for i in range(COUNT)]
    params = transform.sample_params(images)
    out, out_targets = transform(images, targets, params=params)
    assert torch.equal(out, transform(images, params))
    for i in range(COUNT):
        row, apply = torchvision_warp_row(params, i)
        pairs = ([(f"mask {k}", m, o) for k, (m, o) in enumerate(zip(targets[i]["masks"],
                                                                      out_targets[i]["masks"]))]
                 + [(f"boxes {b.format.name} {b.dtype}", b, o)
                    for b, o in zip(targets[i]["boxes"], out_targets[i]["boxes"])]
                 + [("key points", targets[i]["points"], out_targets[i]["points"])])
        for what, target, moved in pairs:
            expected = tv.transform(target, row) if apply else target
            assert_same_target(moved, expected, f"{name} sample {i} {what}")
        assert out_targets[i]["label"] == 7


@requires_cuda
@pytest.mark.parametrize("name", ["RandomResizedCrop", "CenterCrop larger", "Pad reflect"])
def test_targets_on_cuda(name):
    """Targets on the GPU come out as the same targets moved on the CPU with the same params
    (masks through the op on each device: nearest picks the same pixels)."""
    case = CASES[name]
    transform = made(T, case)
    images = make_images([COUNT, 3, *SIZE], torch.uint8, seed=3)
    targets = [make_targets(seed=20 * i) for i in range(COUNT)]
    if not moves_points(case):
        targets = [{"masks": t["masks"], "label": t["label"]} for t in targets]
    params = transform.sample_params(images)
    out, expected = transform(images, targets, params=params)
    # (.to keeps a tv_tensor's class and metadata, .cuda() would not)
    on_gpu = pytree.tree_map(lambda x: x.to("cuda") if isinstance(x, torch.Tensor) else x,
                             targets)
    gpu_out, moved = transform(images.to("cuda"), on_gpu,
                               params={key: value.to("cuda") for key, value in params.items()})
    # (the images within one: torch's CPU resize of uint8 rounds its two passes, its CUDA one not)
    assert (gpu_out.to("cpu").int() - out.int()).abs().max() <= 1
    for got, want in zip(pytree.tree_leaves(moved), pytree.tree_leaves(expected), strict=True):
        if isinstance(want, torch.Tensor):
            assert got.device.type == "cuda"
            assert_same_target(got.to("cpu"), want, f"{name} on cuda")
