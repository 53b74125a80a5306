"""Cases of gpuaug.transforms' photometric transforms against torchvision.transforms.v2 (one
parameter set per batch, as it draws them) and Kornia (per sample, when it is installed).

The headline: a 256x3x224x224 uint8 batch through ColorJitter(0.4, 0.4, 0.4, 0.1), converted to
float32 and normalised. gpuaug's time includes its per-sample draws; bytes are those of a
two-pass design (the image read twice, the output written once). The op alone is also set
against what PyTorch and torchvision take to feed the same batch without augmentation: the
uint8 -> float32 conversion alone, and ToDtype + Normalize; and in channels_last memory against
the conversion there. The same without contrast runs one pass. The batch shrinks with --size
(256 at the default 2^28). RandomPhotometricDistort and the Compose flip coins (torchvision one
per batch): their times are means over a seeded sequence. ColorAugment inside the jitter's
Compose is set against gpuaug's two calls one after the other. The self-supervised recipes'
colour augmentation (RandomApply of ColorJitter, p = 0.8, then RandomGrayscale, p = 0.2) is set
against torchvision's (coins per batch) and Kornia's (per sample), a RandomChoice then a
RandomOrder against torchvision's (a choice and an order per batch). Per-sample ColorJitter is
also set against torch.compile of torchvision's formulas with per-sample factors
(photometric_compiled.py) and against NVIDIA DALI's colour twist (photometric_dali.py). The
image's gradient through the jitter (float32, forward and backward) is set against Kornia's and,
without hue, torchvision's.
"""

from typing import Callable, Optional

import torch

from .. import transforms as T
from .harness import Case, register
from .photometric_compiled import per_sample_jitter_normalize
from .photometric_dali import dali_jitter_normalize

DEFAULT_SIZE = 2**28
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def image_inputs(shape, device):
    return lambda: (torch.randint(0, 256, shape, device=device, dtype=torch.uint8),)


def photo_like_inputs(shape, device):
    """Images like photographs as a histogram sees them: smooth (bilinear from 8x8 random
    values), with a third of their area saturated at 0 or 255, so that neighbouring pixels share
    values. Random bytes spread equalize's counts over all 256 values; these pile them up."""
    def make():
        n, c, h, w = shape
        coarse = torch.rand(n, c, 8, 8, device=device) * 384 - 64
        fine = torch.nn.functional.interpolate(coarse, size=(h, w), mode="bilinear")
        return (fine.clamp_(0, 255).round_().to(torch.uint8),)
    return make


def jitter_inputs(shape, device, transform):
    """The image and our draws for it: the op alone, without drawing."""
    def make():
        image = torch.randint(0, 256, shape, device=device, dtype=torch.uint8)
        return (image, transform.sample_params(image))
    return make


def channels_last(make):
    """The same inputs with the image in channels_last (NHWC) memory, as decoders give them."""
    def make_channels_last():
        image, *rest = make()
        return (image.contiguous(memory_format=torch.channels_last), *rest)
    return make_channels_last


def torchvision_jitter_normalize(brightness: float, contrast: float, saturation: float,
                                 hue: float) -> Optional[Callable]:
    try:
        from torchvision.transforms import v2
    except ImportError:
        return None
    jitter = v2.ColorJitter(brightness, contrast, saturation, hue)
    pipeline = v2.Compose([jitter, v2.ToDtype(torch.float32, scale=True),
                           v2.Normalize(MEAN, STD)])
    return lambda x, *rest: pipeline(x)


def torchvision_to_dtype_normalize() -> Optional[Callable]:
    try:
        from torchvision.transforms import v2
    except ImportError:
        return None
    pipeline = v2.Compose([v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)])
    return lambda x, *rest: pipeline(x)


def conversion_alone(x, *rest):
    return x.to(torch.float32)


def kornia_jiggle_normalize() -> Optional[Callable]:
    try:
        import kornia.augmentation as K
    except ImportError:
        return None
    jiggle = K.ColorJiggle(0.4, 0.4, 0.4, 0.1, p=1.0)
    normalize = K.Normalize(torch.tensor(MEAN), torch.tensor(STD))

    def run(x, *rest):
        return normalize(jiggle(x.float() / 255))
    return run


def torchvision_same(transform_name: str, *args) -> Optional[Callable]:
    try:
        from torchvision.transforms import v2
    except ImportError:
        return None
    t = getattr(v2, transform_name)(*args)
    return lambda x, *rest: t(x)


def torchvision_compose(transforms: Callable) -> Optional[Callable]:
    """torchvision's v2.Compose of ``transforms(v2)`` (gpuaug's cases build theirs of
    gpuaug.transforms), or None without torchvision."""
    try:
        from torchvision.transforms import v2
    except ImportError:
        return None
    t = v2.Compose(transforms(v2))
    return lambda x, *rest: t(x)


def five_transforms(module):
    return [module.ColorJitter(0.4, 0.4, 0.4, 0.1), module.RandomGrayscale(0.2),
            module.RandomSolarize(128.0), module.RandomPosterize(4), module.RandomInvert()]


def choice_and_order(module):
    """A per-sample choice of one of four, then three in a per-sample order: one call (equalize
    its one reduction)."""
    return [module.RandomChoice([module.RandomPosterize(4, 1.0), module.RandomSolarize(128.0, 1.0),
                                 module.RandomEqualize(1.0), module.RandomInvert(1.0)],
                                p=[2, 1, 1, 1]),
            module.RandomOrder([module.ColorJitter(0.4, 0, 0.4, 0.1),
                                module.RandomGrayscale(0.2), module.RandomInvert(0.1)])]


def nested(module):
    """Containers inside containers: a coin around a choice of a Compose (ColorJitter with
    contrast: two passes) or an order of three, in one call."""
    return [module.RandomApply([module.RandomChoice([
        module.Compose([module.ColorJitter(0.4, 0.4, 0.4, 0.1), module.RandomGrayscale(0.2)]),
        module.RandomOrder([module.RandomPosterize(4), module.RandomSolarize(128.0),
                            module.RandomInvert(0.5)])], p=[3, 1])], p=0.8)]


def self_supervised(module, *tail):
    """The colour part of SimCLR's, BYOL's and DINO's augmentation, then the conversion."""
    return [module.RandomApply([module.ColorJitter(0.4, 0.4, 0.2, 0.1)], p=0.8),
            module.RandomGrayscale(0.2), *tail]


def float_first(module):
    """ToDtype before the jitter: the conversion, then torchvision's float path."""
    return [module.ToDtype(torch.float32, scale=True), module.ColorJitter(0.4, 0.4, 0.4, 0.1),
            module.Normalize(MEAN, STD)]


def gray_to_rgb(module):
    """A grayscale dataset's batch made three channels for an ImageNet model, then jittered."""
    return [module.RGB(), module.ColorJitter(0.4, 0.4, 0.4, 0.1),
            module.ToDtype(torch.float32, scale=True), module.Normalize(MEAN, STD)]


def to_one_plane(module):
    """The jitter, then the grayscale of a model that takes one channel."""
    return [module.ColorJitter(0.4, 0.4, 0.4, 0.1), module.Grayscale(),
            module.ToDtype(torch.float32, scale=True), module.Normalize([0.5], [0.25])]


def kornia_self_supervised() -> Optional[Callable]:
    try:
        import kornia.augmentation as K
    except ImportError:
        return None
    t = torch.nn.Sequential(K.ColorJiggle(0.4, 0.4, 0.2, 0.1, p=0.8), K.RandomGrayscale(p=0.2),
                            K.Normalize(torch.tensor(MEAN), torch.tensor(STD)))
    return lambda x, *rest: t(x.float() / 255)


def gradient_inputs(shape, device):
    """A float32 image in [0, 1] that requires its gradient, and a gradient for the output."""
    def make():
        image = torch.rand(shape, device=device).requires_grad_()
        return (image, torch.randn(shape, device=device))
    return make


def image_gradient(transform: Optional[Callable]) -> Optional[Callable]:
    """The image's gradient through ``transform``: its forward and backward in one call."""
    if transform is None:
        return None
    return lambda x, grad, *rest: torch.autograd.grad(transform(x), x, grad)[0]


def torchvision_float_jitter_normalize(hue: float) -> Optional[Callable]:
    try:
        from torchvision.transforms import v2
    except ImportError:
        return None
    return v2.Compose([v2.ColorJitter(0.4, 0.4, 0.4, hue), v2.Normalize(MEAN, STD)])


def kornia_float_jiggle_normalize() -> Optional[Callable]:
    try:
        import kornia.augmentation as K
    except ImportError:
        return None
    return torch.nn.Sequential(K.ColorJiggle(0.4, 0.4, 0.4, 0.1, p=1.0),
                               K.Normalize(torch.tensor(MEAN), torch.tensor(STD)))


def copy_of_image(x, *rest):
    return torch.empty_like(x).copy_(x)


@register
def cases(numel: int, device: torch.device) -> list[Case]:
    n = max(1, 256 * numel // DEFAULT_SIZE)
    shape = (n, 3, 224, 224)
    pixels = n * 3 * 224 * 224
    u8 = torch.uint8
    jitter = T.ColorJitter(0.4, 0.4, 0.4, 0.1, dtype=torch.float32, mean=MEAN, std=STD)
    two_pass = 2 * pixels + 4 * pixels
    # the op alone: jitter called with its draws made beforehand
    result = [
        Case("photometric jitter u8->f32 op", shape, u8, jitter_inputs(shape, device, jitter),
             jitter, copy_of_image, "copy of the image", two_pass),
        # the same bytes through PyTorch with no augmentation: the bare conversion, then what a
        # training loop feeds the model without augmentation
        Case("photometric jitter u8->f32 op", shape, u8, jitter_inputs(shape, device, jitter),
             jitter, conversion_alone, "torch uint8->float32 conversion alone", two_pass),
    ]
    baseline = torchvision_to_dtype_normalize()
    if baseline is not None:
        result.append(Case("photometric jitter u8->f32 op", shape, u8,
                           jitter_inputs(shape, device, jitter), jitter, baseline,
                           "torchvision ToDtype+Normalize alone", two_pass))
    for baseline, label in [(torchvision_jitter_normalize(0.4, 0.4, 0.4, 0.1),
                             "torchvision ColorJitter+Normalize"),
                            (kornia_jiggle_normalize(), "Kornia ColorJiggle+Normalize")]:
        if baseline is not None:
            result.append(Case("photometric jitter u8->f32", shape, u8, image_inputs(shape, device),
                               jitter, baseline, label, two_pass))
    # what a user would build without gpuaug: per-sample factors on torchvision's formulas,
    # compiled (one fixed order)
    result.append(Case("photometric jitter per sample u8->f32", shape, u8,
                       image_inputs(shape, device), jitter, per_sample_jitter_normalize(MEAN, STD),
                       "torch.compile per-sample ColorJitter+Normalize (fixed order)", two_pass))
    # DALI, prefetching, read through its PyTorch iterator: both sides at the pace of a steady
    # stream of calls (host included), gpuaug's with its draws, on interleaved (HWC) images
    baseline = dali_jitter_normalize(0.4, 0.4, 0.4, 0.1, MEAN, STD)
    if baseline is not None:
        result.append(Case("photometric jitter u8->f32, channels_last, steady", shape, u8,
                           channels_last(image_inputs(shape, device)), jitter, baseline,
                           "DALI color_twist+crop_mirror_normalize (per sample)", two_pass,
                           hold_gpu=False))
    # channels_last in and out: the same op alone, and against PyTorch's bare conversion there
    result.append(Case("photometric jitter u8->f32 op, channels_last", shape, u8,
                       channels_last(jitter_inputs(shape, device, jitter)), jitter,
                       conversion_alone, "torch uint8->float32 conversion alone", two_pass))
    # without contrast: no reduction, one pass (the image read once, the output written once)
    baseline = torchvision_jitter_normalize(0.4, 0.0, 0.4, 0.1)
    if baseline is not None:
        no_contrast = T.ColorJitter(0.4, 0.0, 0.4, 0.1, dtype=torch.float32, mean=MEAN, std=STD)
        result.append(Case("photometric jitter, no contrast, u8->f32", shape, u8,
                           image_inputs(shape, device), no_contrast, baseline,
                           "torchvision ColorJitter(0.4, 0, 0.4, 0.1)+Normalize", 5 * pixels))
    distort = T.RandomPhotometricDistort()
    baseline = torchvision_same("RandomPhotometricDistort")
    if baseline is not None:
        result.append(Case("photometric distort u8->u8", shape, u8, image_inputs(shape, device),
                           distort, baseline, "torchvision RandomPhotometricDistort",
                           4 * pixels, random_programs=True))
    equalize = T.RandomEqualize(1.0)
    baseline = torchvision_same("RandomEqualize", 1.0)
    if baseline is not None:
        # bytes: the histogram pass's read, then the element-wise pass's read and write
        result.append(Case("photometric equalize u8->u8", shape, u8, image_inputs(shape, device),
                           equalize, baseline, "torchvision RandomEqualize", 3 * pixels))
        result.append(Case("photometric equalize u8->u8, photo-like", shape, u8,
                           photo_like_inputs(shape, device), equalize, baseline,
                           "torchvision RandomEqualize", 3 * pixels))
    # ColorAugment fused into the jitter's call, against the two ops one after the other
    fused = T.Compose([T.ColorAugment(), T.ColorJitter(0.4, 0.4, 0.4, 0.1)], dtype=torch.float32,
                      mean=MEAN, std=STD)
    augment = T.ColorAugment()
    result.append(Case("photometric ColorAugment+jitter u8->f32, one call", shape, u8,
                       image_inputs(shape, device), fused, lambda x, *rest: jitter(augment(x)),
                       "gpuaug ColorAugment, then ColorJitter", two_pass))
    compose = T.Compose(five_transforms(T))
    baseline = torchvision_compose(five_transforms)
    if baseline is not None:
        result.append(Case("photometric 5-transform compose u8->u8", shape, u8,
                           image_inputs(shape, device), compose, baseline,
                           "torchvision Compose", 3 * pixels, random_programs=True))
    choosing = T.Compose(choice_and_order(T))
    baseline = torchvision_compose(choice_and_order)
    if baseline is not None:
        # bytes: the histogram pass's read, then the element-wise pass's read and write
        result.append(Case("photometric choice+order u8->u8", shape, u8,
                           image_inputs(shape, device), choosing, baseline,
                           "torchvision RandomChoice, RandomOrder", 3 * pixels,
                           random_programs=True))
    baseline = torchvision_compose(nested)
    if baseline is not None:
        result.append(Case("photometric nested containers u8->u8", shape, u8,
                           image_inputs(shape, device), T.Compose(nested(T)), baseline,
                           "torchvision, the same nesting", 3 * pixels, random_programs=True))
    # a pipeline that converts first and jitters floats: two calls (the conversion's pass, then
    # the float jitter's two), against torchvision's same Compose
    baseline = torchvision_compose(float_first)
    if baseline is not None:
        result.append(Case("photometric ToDtype first, jitter f32, Normalize", shape, u8,
                           image_inputs(shape, device), T.Compose(float_first(T)), baseline,
                           "torchvision Compose", 17 * pixels, random_programs=True))
    # a 1-channel batch: its plane read in place as three channels (stride 0) by the op's two
    # passes (1 + 1 bytes a pixel), three float32 planes written (12)
    baseline = torchvision_compose(gray_to_rgb)
    if baseline is not None:
        gray_shape = (n, 1, 224, 224)
        result.append(Case("photometric 1 channel, RGB, jitter u8->f32, Normalize", gray_shape,
                           u8, image_inputs(gray_shape, device), T.Compose(gray_to_rgb(T)),
                           baseline, "torchvision Compose", 14 * pixels // 3,
                           random_programs=True))
    # one plane out: the jitter and grayscale's two passes in uint8 (3 + 3 bytes a pixel read,
    # 3 written), then the first plane, read in place, converted (1 + 4)
    baseline = torchvision_compose(to_one_plane)
    if baseline is not None:
        result.append(Case("photometric jitter, Grayscale(1) u8->f32, Normalize", shape, u8,
                           image_inputs(shape, device), T.Compose(to_one_plane(T)), baseline,
                           "torchvision Compose", 14 * pixels // 3, random_programs=True))
    # the image's gradient through the jitter (float32 in [0, 1], forward and backward), as
    # learned or adversarial augmentation asks; torchvision's hue has no autograd, so its
    # baseline and the gpuaug side set against it leave hue out. Bytes: the forward's read and
    # write, the backward's two reads (image, gradient) and one write.
    for hue, baseline, label in [
            (0.1, kornia_float_jiggle_normalize(), "Kornia ColorJiggle+Normalize (per sample)"),
            (0.0, torchvision_float_jitter_normalize(0.0),
             "torchvision ColorJitter(0.4, 0.4, 0.4)+Normalize")]:
        if baseline is not None:
            ours = T.ColorJitter(0.4, 0.4, 0.4, hue, mean=MEAN, std=STD)
            result.append(Case(f"photometric jitter gradient f32, hue {hue}", shape,
                               torch.float32, gradient_inputs(shape, device), image_gradient(ours),
                               image_gradient(baseline), label, 20 * pixels))
    ssl = T.Compose(self_supervised(T), dtype=torch.float32, mean=MEAN, std=STD)
    torchvision_ssl = torchvision_compose(lambda v2: self_supervised(
        v2, v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)))
    for baseline, label in [(torchvision_ssl, "torchvision"),
                            (kornia_self_supervised(), "Kornia (per sample)")]:
        if baseline is not None:
            result.append(Case("photometric self-supervised u8->f32", shape, u8,
                               image_inputs(shape, device), ssl, baseline, label, two_pass,
                               random_programs=True))
    return result
