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

local Mnist = {}
Mnist.SUBDIR = 'mnist'
Mnist.mirrors = {'https://ossci-datasets.s3.amazonaws.com/mnist/', 'http://yann.lecun.com/exdb/mnist/'}
Mnist.resources = {
   {'train-images-idx3-ubyte.gz', 'f68b3c2dcbeaaa9fbdd348bbdeb94873'},
   {'train-labels-idx1-ubyte.gz', 'd53e105ee54ea40749a09fcbcd1e9432'},
   {'t10k-images-idx3-ubyte.gz', '9fb629c4189551a2d022fa330f9573f3'},
   {'t10k-labels-idx1-ubyte.gz', 'ec29112dd5afa0611ce80d1b7f02629c'},
}
Mnist.classes = {'0', '1', '2', '3', '4', '5', '6', '7', '8', '9'}

local prefixes = {train = 'train', test = 't10k'}

function Mnist.set_mirrors(list) Mnist.mirrors = idx.mirror_list('Mnist', list) end

function Mnist.dir() return require('fastnn.data').dir() .. '/' .. Mnist.SUBDIR end

local OPTS = require('fastnn.options').declare('data.Mnist.load', {
   {'progress', 'boolean|string', nil, "download progress: true/'auto', 'bar', 'line', false/'quiet'",
    values = {'auto', 'bar', 'line', 'quiet'}, default_doc = 'data.defaults.progress'},
   {'timeout', 'number', nil, 'seconds for a whole file', min = 0, default_doc = 'data.defaults.timeout'},
   {'connect_timeout', 'number', nil, 'seconds to connect', min = 0, default_doc = 'data.defaults.connect_timeout'},
})

function Mnist.try_load(split, opts)
   local bad = OPTS:try(opts)
   if bad then error(bad, 2) end   -- a mistake of the caller's, not a failed download
   split = split or 'train'
   local prefix = prefixes[split]
   if not prefix then
      return nil, ("Mnist.load: split is '%s', expected 'train' or 'test'"):format(tostring(split))
   end
   local dir, err = idx.try_fetch('Mnist', Mnist.mirrors, Mnist.resources, Mnist.dir(), opts)
   if not dir then return nil, err end
   local ds, err2 = idx.try_pair('Mnist', dir .. '/' .. prefix .. '-images-idx3-ubyte.gz',
                                 dir .. '/' .. prefix .. '-labels-idx1-ubyte.gz')
   if not ds then return nil, err2 end
   ds.classes, ds.split = Mnist.classes, split
   return ds
end

function Mnist.load(split, opts)
   local bad = OPTS:try(opts)
   if bad then error(bad, 2) end
   local ds, err = Mnist.try_load(split, opts)
   if not ds then error(err, 2) end
   return ds
end

return Mnist
