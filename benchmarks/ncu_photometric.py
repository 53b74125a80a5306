import torch, gpuaug
from gpuaug import transforms as T
j = T.ColorJitter(0.4, 0.4, 0.4, 0.1, dtype=torch.float32, mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
x = torch.randint(0, 256, (256, 3, 224, 224), dtype=torch.uint8, device="cuda")
p = j.sample_params(x)
for _ in range(3):
    j(x, p)
torch.cuda.synchronize()
