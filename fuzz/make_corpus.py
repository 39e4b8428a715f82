#!/usr/bin/env python3
"""fuzz/make_corpus.py: (re)writes the seed corpora fuzz/corpus/<target>/seed-*: small valid
inputs (and a few near-valid ones) for each fuzz target, in each target's input format (see the
comment at the top of fuzz/<target>.c). The .fdl seeds are written by fastnn itself (fnn.save,
fnn.save_training: luajit with FASTNN_LIB, default build/libfastnn.so), the safetensors seeds by
Python's safetensors package when it is installed (else by hand, the format being that simple).
regress-* files (crashes found, kept forever) are never touched.
    python3 fuzz/make_corpus.py"""
import gzip, json, os, struct, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CORPUS = os.path.join(HERE, 'corpus')


def put(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, 'seed-' + name), 'wb') as f:
        f.write(data)


def idx(shape, values=None):
    n = 1
    for s in shape:
        n *= s
    body = bytes(values if values is not None else [(i * 37) % 256 for i in range(n)])
    return bytes([0, 0, 8, len(shape)]) + b''.join(struct.pack('>I', s) for s in shape) + body


def idx_seeds():
    images, labels = idx([3, 4, 5]), idx([3], [1, 9, 0])
    for name, f in [('images', images), ('labels', labels), ('empty', idx([0])), ('4d', idx([2, 1, 2, 2])),
                    ('28x28', idx([1, 28, 28]))]:
        put('idx', name + '-plain', b'\x00' + f)                     # the file as it is
        put('idx', name + '-gz', b'\x00' + gzip.compress(f, mtime=0))  # a real .gz, mutated as bytes
        put('idx', name + '-zipped', b'\x01' + f)                    # gzipped by the harness
    put('idx', 'bad-type', b'\x00' + bytes([0, 0, 0x0d, 1, 0, 0, 0, 2]) + b'\x00' * 8)
    put('idx', 'truncated', b'\x00' + images[:-7])


def safetensors(tensors, meta=None):
    """tensors: [(name, dtype, shape, raw bytes)]"""
    header, at = {}, 0
    if meta:
        header['__metadata__'] = meta
    for name, dt, shape, raw in tensors:
        header[name] = {'dtype': dt, 'shape': shape, 'data_offsets': [at, at + len(raw)]}
        at += len(raw)
    text = json.dumps(header, separators=(',', ':')).encode()
    text += b' ' * (-len(text) % 8)
    return struct.pack('<Q', len(text)) + text + b''.join(t[3] for t in tensors)


def checkpoint_seeds():
    f32 = struct.pack('<6f', 1, -2, 3.5, 0, 1e-3, -7)
    put('checkpoint', 'hand-f32', safetensors([('w', 'F32', [2, 3], f32)], {'format': 'pt'}))
    put('checkpoint', 'hand-mixed', safetensors([
        ('a', 'F16', [2], struct.pack('<2H', 0x3c00, 0xc000)), ('b', 'BF16', [1], struct.pack('<H', 0x3f80)),
        ('c', 'I64', [2], struct.pack('<2q', 5, -1)), ('d', 'I32', [1, 1], struct.pack('<i', 7)),
        ('e', 'F64', [], struct.pack('<d', 2.5)), ('f', 'F32', [0, 3], b'')]))
    put('checkpoint', 'hand-empty', safetensors([]))
    try:
        import numpy as np
        from safetensors.numpy import save
        put('checkpoint', 'py-safetensors', save({
            'weight': np.arange(6, dtype=np.float32).reshape(2, 3), 'bias': np.array([0.5, -1], dtype=np.float16),
            'ids': np.array([[1, 2], [3, 4]], dtype=np.int64), 'count': np.array([9], dtype=np.int32),
            'scale': np.array(0.25, dtype=np.float64)}, metadata={'source': 'python safetensors'}))
    except ImportError:
        print('make_corpus: python safetensors not installed; the hand-written seeds stand in', file=sys.stderr)
    # fastnn's own files: weights and a training checkpoint (optimizer state, step, random stream)
    lib = os.environ.get('FASTNN_LIB') or os.path.join(ROOT, 'build', 'libfastnn.so')
    with tempfile.TemporaryDirectory() as tmp:
        script = r'''
package.path = ROOT .. '/lua/?.lua;' .. ROOT .. '/lua/?/init.lua;' .. package.path
local fnn = require 'fastnn'
fnn.manual_seed(1)
local model = fnn.nn.Sequential(fnn.nn.Linear(3, 2), fnn.nn.ReLU(), fnn.nn.Linear(2, 1))
fnn.save(model, TMP .. '/weights.fdl')
local opt = fnn.optim.Adam(model:parameters(), {lr = 1e-3})
local loss = model:forward(fnn.randn(4, 3)):sum()
loss:backward()
opt:step()
fnn.save_training(model, opt, 1, TMP .. '/training.fdl')
fnn.save_safetensors(model, TMP .. '/plain.safetensors')
'''
        env = dict(os.environ, FASTNN_LIB=lib)
        run = subprocess.run(['luajit', '-e', 'ROOT = %r TMP = %r' % (ROOT, tmp), '-e', script], env=env,
                             capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit('make_corpus: writing the .fdl seeds failed:\n' + run.stderr)
        for name in ['weights.fdl', 'training.fdl', 'plain.safetensors']:
            with open(os.path.join(tmp, name), 'rb') as f:
                put('checkpoint', name.replace('.', '-'), f.read())


def fdl_seeds():
    # fuzz/fdl.lua edits a real training checkpoint: lines key=value, @tensor=d1,d2, !key
    lib = os.environ.get('FASTNN_LIB') or os.path.join(ROOT, 'build', 'libfastnn.so')
    script = r'''
package.path = ROOT .. '/lua/?.lua;' .. ROOT .. '/lua/?/init.lua;' .. package.path
local fnn = require 'fastnn'
local _, meta = fnn.load_safetensors(ROOT .. '/fuzz/corpus/checkpoint/seed-training-fdl')
io.write(meta['fdl.training'])
'''
    run = subprocess.run(['luajit', '-e', 'ROOT = %r' % ROOT, '-e', script], env=dict(os.environ, FASTNN_LIB=lib),
                         capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit('make_corpus: reading the training state failed:\n' + run.stderr)
    state = run.stdout
    put('fdl', 'as-saved', b'')
    put('fdl', 'state', ('fdl.training=' + state + '\n').encode())
    put('fdl', 'step', b'fdl.step=12\nfdl.version=1\n')
    put('fdl', 'weights-kind', b'fdl.kind=weights\n')
    put('fdl', 'reshaped', b'@1.weight=2,4\n')
    put('fdl', 'dropped', b'!2.bias\n')
    put('fdl', 'groups', ('fdl.training=' + state.replace('"groups":[{', '"groups":[7,{') + '\n').encode())


def csv_seeds():
    # option byte (fuzz/csv.lua): bit 0 no header, bits 1-2 delimiter , ; tab |, bit 3 missing = NaN,
    # bits 4-6 target_columns (default, {}, 1, -1, {1, 2}, 'b', {'a', 'c'}, 99)
    put('csv', 'basic', b'\x00' + b'a,b,c\n1,2,3\n4,5,6\n')
    put('csv', 'quotes', b'\x00' + b'x,"y, z",label\n1,"2",a\n"3",4,"b"\n"-1.5e3","""7""",c\n')
    put('csv', 'escaped', b'\x00' + b'a,b\n"say ""hi""",1\n')
    put('csv', 'missing', b'\x08' + b'a,b\n1,\n,2\n ,3\n')
    put('csv', 'crlf', b'\x00' + b'a,b\r\n1,2\r\n3,4\r\n')
    put('csv', 'semicolon-noheader', b'\x03' + b'1;2\n3;4\n\n5;6')
    put('csv', 'tab-words', b'\x54' + b'a\tb\n1\tcat\n2\tdog\n3\tcat\n')
    put('csv', 'pipe-two-targets', b'\x46' + b'a|b|c\n1|2|3\n4|5|6\n')
    put('csv', 'no-targets', b'\x10' + b'a,b\n0x10,1e-3\n')
    put('csv', 'bad-field', b'\x00' + b'a,b\nfoo,1\n')
    put('csv', 'short-row', b'\x00' + b'a,b,c\n1,2\n')
    put('csv', 'unterminated', b'\x00' + b'a,b\n"1,2\n')


def text_seeds():
    # mode byte (fuzz/text.c): bit 0 bytes, bit 1 split at the cut byte, bit 2 through a file; then the cut byte
    put('text', 'ascii', b'\x00\x00' + b'hello world\n')
    put('text', 'utf8', b'\x00\x00' + 'héllo wörld — ✓ 𝄞 日本\n'.encode())
    put('text', 'split', b'\x02\x05' + b'hello, hello olleh')
    put('text', 'split-unknown', b'\x02\x03' + 'abcabd é'.encode())
    put('text', 'file', b'\x04\x00' + 'a file, ünïcode\n'.encode())
    put('text', 'bytes', b'\x01\x00' + b'\xff\xfe\x00abc\x80')
    put('text', 'bytes-split', b'\x03\x02' + b'\x00\x01\x02\x00\x03')
    put('text', 'empty', b'\x00\x00')
    for i, bad in enumerate([b'\xc3(', b'\xe2\x82', b'\xc0\xaf', b'\xed\xa0\x80', b'\xf4\x90\x80\x80', b'ok\xff']):
        put('text', 'invalid-%d' % i, b'\x00\x00' + b'ab' + bad)


def shape_seeds():
    # fuzz/shape.lua's decoding: call byte, then the values v and s (kind byte, then its payload)
    put('shape', 'nested', bytes([0, 3, 2, 4, 2, 101, 102, 4, 2, 103, 104]))      # tensor{{1,2},{3,4}}
    put('shape', 'flat-shape', bytes([1, 4, 6, 101, 102, 103, 104, 105, 106, 4, 2, 102, 103]))  # tensor(6 values, {2,3})
    put('shape', 'long', bytes([2, 4, 3, 100, 101, 102]))                           # long{0,1,2}
    put('shape', 'zeros', bytes([3, 5, 4, 2, 102, 103]))                             # zeros{2,3}
    put('shape', 'ones', bytes([4, 5, 4, 3, 101, 102, 103]))
    put('shape', 'empty', bytes([5, 5, 4, 2, 103, 101]))
    put('shape', 'full', bytes([6, 0, 4, 4, 2, 103, 102]))
    put('shape', 'rand', bytes([7, 5, 4, 1, 104]))
    put('shape', 'reshape', bytes([8, 5, 4, 3, 102, 99, 103]))                      # reshape{2,-1,3}
    put('shape', 'view', bytes([9, 5, 4, 2, 103, 102]))
    put('shape', 'special', bytes([3, 5, 3, 2, 2, 5, 2, 12]))                       # zeros{-1/0... specials}


def image_seeds():
    """pictures for fuzz/image.c: spec/fixtures/image's JPEGs (written by Pillow) and PNGs written
    here with zlib (grey, grey + alpha, RGB, RGBA, a palette), and a few broken ones"""
    import zlib

    def chunk(kind, body):
        return struct.pack('>I', len(body)) + kind + body + struct.pack('>I', zlib.crc32(kind + body) & 0xffffffff)

    def png(w, h, colour, channels, extra=b''):
        rows = b''.join(b'\x00' + bytes((x * 37 + y * 11 + k) % 256 for x in range(w) for k in range(channels))
                        for y in range(h))
        return (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, colour, 0, 0, 0)) + extra
                + chunk(b'IDAT', zlib.compress(rows)) + chunk(b'IEND', b''))

    put('image', 'grey.png', png(5, 4, 0, 1))
    put('image', 'grey-alpha.png', png(3, 3, 4, 2))
    put('image', 'rgb.png', png(4, 3, 2, 3))
    put('image', 'rgba.png', png(2, 2, 6, 4))
    put('image', 'palette.png', png(3, 2, 3, 1, chunk(b'PLTE', bytes(i % 256 for i in range(3 * 256)))))
    good = png(4, 3, 2, 3)
    put('image', 'bad-crc.png', good[:-1] + bytes([good[-1] ^ 1]))   # IEND's CRC
    put('image', 'truncated.png', good[:len(good) // 2])
    for name in ('colour', 'grey'):
        with open(os.path.join(ROOT, 'spec', 'fixtures', 'image', name + '.jpg'), 'rb') as f:
            jpeg = f.read()
        put('image', name + '.jpg', jpeg)
        put('image', name + '-truncated.jpg', jpeg[:len(jpeg) // 2])
    put('image', 'empty', b'')


if __name__ == '__main__':
    idx_seeds()
    checkpoint_seeds()
    fdl_seeds()
    csv_seeds()
    text_seeds()
    shape_seeds()
    image_seeds()
    for t in sorted(os.listdir(CORPUS)):
        print('fuzz/corpus/%s: %d files' % (t, len(os.listdir(os.path.join(CORPUS, t)))))
