#!/usr/bin/env python3
"""Writes spec/fixtures/image/: small JPEGs made by another tool (Pillow, with its own bundled
libjpeg-turbo) and the pixels that libjpeg-turbo decodes them to (Pillow's decoder: islow DCT,
fancy upsampling, as TurboJPEG's defaults), as Lua tables for spec/image_spec.lua.
Run from the repository root: python3 tools/make_image_fixtures.py (needs `pip install pillow`)."""
import os
import PIL
from PIL import Image, features

OUT = "spec/fixtures/image"
os.makedirs(OUT, exist_ok=True)

def colour(w, h):
    img = Image.new("RGB", (w, h))
    img.putdata([((x * 255) // (w - 1), (y * 255) // (h - 1), ((x + y) * 37) % 256)
                 for y in range(h) for x in range(w)])
    return img

def grey(w, h):
    img = Image.new("L", (w, h))
    img.putdata([(x * 29 + y * 13) % 256 for y in range(h) for x in range(w)])
    return img

def write(name, img, **kw):
    path = os.path.join(OUT, name + ".jpg")
    img.save(path, "JPEG", **kw)
    dec = Image.open(path)
    dec.load()
    w, h = dec.size
    chans = len(dec.getbands())
    px = dec.tobytes()   # interleaved 8-bit samples, rows top first
    with open(os.path.join(OUT, name + "_ref.lua"), "w") as f:
        f.write("-- %s.jpg as libjpeg-turbo %s (Pillow %s) decodes it: written by tools/make_image_fixtures.py\n"
                % (name, features.version("libjpeg_turbo"), PIL.__version__))
        f.write("return {width = %d, height = %d, channels = %d, pixels = {  -- rows top first, interleaved\n"
                % (w, h, chans))
        for y in range(h):
            vals = px[y * w * chans:(y + 1) * w * chans]
            f.write("  " + ",".join(str(v) for v in vals) + ",\n")
        f.write("}}\n")

write("colour", colour(16, 12), quality=90)
write("grey", grey(8, 8), quality=95)
