"""bench/reference/image_loader.py DIR: the reference for bench/image_loader.lua on the same files.
torchvision's ImageFolder with transforms.Compose([RandomResizedCrop(224), RandomHorizontalFlip(),
ToTensor(), Normalize(...)]) where a torchvision matching the installed torch imports; else the same
work by hand: Pillow decodes, RandomResizedCrop(224) (torchvision's get_params), a flip with p 0.5 and
Normalize with Pillow and torch. Either way torch's DataLoader(batch_size=32, shuffle=True,
num_workers=2). Prints images/s over one pass, after one untimed pass, and which reference ran."""
import math, os, random, sys, time
import numpy as np
import torch
from PIL import Image

MEAN = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)


def rrc_box(w, h, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)):
    area = w * h
    for _ in range(10):
        target = area * random.uniform(*scale)
        aspect = math.exp(random.uniform(math.log(ratio[0]), math.log(ratio[1])))
        cw, ch = int(round(math.sqrt(target * aspect))), int(round(math.sqrt(target / aspect)))
        if 0 < cw <= w and 0 < ch <= h:
            return random.randint(0, w - cw), random.randint(0, h - ch), cw, ch
    return 0, 0, w, h


class Folder(torch.utils.data.Dataset):
    def __init__(self, root):
        self.items = []
        for i, c in enumerate(sorted(os.listdir(root))):
            for f in sorted(os.listdir(os.path.join(root, c))):
                self.items.append((os.path.join(root, c, f), i))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        path, label = self.items[i]
        img = Image.open(path).convert('RGB')
        x, y, cw, ch = rrc_box(*img.size)
        img = img.resize((224, 224), Image.BILINEAR, box=(x, y, x + cw, y + ch))
        if random.random() < 0.5:
            img = img.transpose(Image.FLIP_LEFT_RIGHT)
        t = torch.from_numpy(np.asarray(img, dtype=np.float32) / 255).permute(2, 0, 1)
        return (t - MEAN) / STD, label


def dataset(root):
    try:
        import torchvision
        from torchvision import datasets, transforms as T
    except Exception:   # no torchvision build for this torch: the same transforms by hand
        return Folder(root), 'Pillow + torch DataLoader'
    tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
                    T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    return datasets.ImageFolder(root, transform=tf), 'torchvision %s ImageFolder' % torchvision.__version__


def main():
    torch.set_num_threads(1)
    ds, which = dataset(sys.argv[1])
    print('# reference: %s, DataLoader(num_workers=2)' % which)
    loader = torch.utils.data.DataLoader(ds, batch_size=32, shuffle=True, num_workers=2)
    for _ in loader:
        pass
    t0, n = time.perf_counter(), 0
    for x, _ in loader:
        n += x.shape[0]
    print('RESULT image_loader_reference images_per_s=%.6g img/s' % (n / (time.perf_counter() - t0)))


if __name__ == '__main__':
    main()
