"""The op alone on the GPU, draws made beforehand, 256x3x224x224 uint8: ColorJitter u8 -> f32 +
Normalize, and a Compose of ColorAugment and ColorJitter in one call against ColorAugment then
ColorJitter (two calls). Each time the median of 15 bursts of 20 calls queued behind a sleep.
Run: python benchmarks/photometric_color_augment_fused.py (a CUDA device)."""
import statistics
import torch
import gpuaug.transforms as T

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
dev = "cuda"
torch.manual_seed(0)
x = torch.randint(0, 256, (256, 3, 224, 224), dtype=torch.uint8, device=dev)


def timed(fn, bursts=15, calls=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(bursts):
        torch.cuda._sleep(1_000_000)
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(calls):
            fn()
        b.record()
        torch.cuda.synchronize()
        out.append(a.elapsed_time(b) / calls)
    return statistics.median(out)


jitter = T.ColorJitter(0.4, 0.4, 0.4, 0.1, dtype=torch.float32, mean=MEAN, std=STD)
pj = jitter.sample_params(x)
fused = T.Compose([T.ColorAugment(), T.ColorJitter(0.4, 0.4, 0.4, 0.1)], dtype=torch.float32,
                  mean=MEAN, std=STD)
pf = fused.sample_params(x)
augment = T.ColorAugment()
pa = augment.sample_params(x)
for rnd in range(2):
    j = timed(lambda: jitter(x, pj))
    f = timed(lambda: fused(x, pf))
    s = timed(lambda: jitter(augment(x, pa), pj))
    print(f"round {rnd}: jitter op {j * 1e3:.1f} us; ColorAugment+jitter one call "
          f"{f * 1e3:.1f} us, two calls {s * 1e3:.1f} us ({s / f:.2f}x)", flush=True)
