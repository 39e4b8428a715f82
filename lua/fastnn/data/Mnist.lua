-- data.Mnist.load('train'|'test', opts) -> TensorDataset
--   inputs [N, 1, 28, 28] float32 in [0, 1], targets [N] int64 class ids 1..10 (digit d is id d + 1);
--   N = 60000 for 'train', 10000 for 'test'. try_load returns nil, err instead of raising.
-- The first call downloads the four IDX gz files (both splits) into data.dir() .. '/mnist' with
-- libcurl, trying Mnist.mirrors in order (torchvision's list), resuming a partial file, and checks
-- each against its published MD5 (Mnist.resources, torchvision's) with libcrypto before it is used.
-- Later calls find the verified files there and never touch the network. opts: progress
-- ('auto', 'bar', 'line', false), timeout, connect_timeout (seconds; see data.defaults).
--   data.Mnist.set_mirrors{'https://my.mirror/mnist/', ...}   -- base URLs, tried in order
--   data.set_dir('/data')                                     -- the cache (or $FASTNN_DATA)
local idx = require 'fastnn.data.idx'

return idx.dataset('Mnist', {
   subdir = 'mnist',
   mirrors = {'https://ossci-datasets.s3.amazonaws.com/mnist/', 'http://yann.lecun.com/exdb/mnist/'},
   resources = {
      {'train-images-idx3-ubyte.gz', 'f68b3c2dcbeaaa9fbdd348bbdeb94873'},
      {'train-labels-idx1-ubyte.gz', 'd53e105ee54ea40749a09fcbcd1e9432'},
      {'t10k-images-idx3-ubyte.gz', '9fb629c4189551a2d022fa330f9573f3'},
      {'t10k-labels-idx1-ubyte.gz', 'ec29112dd5afa0611ce80d1b7f02629c'},
   },
   classes = {'0', '1', '2', '3', '4', '5', '6', '7', '8', '9'},
})
