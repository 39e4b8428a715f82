-- data.FashionMnist.load('train'|'test', opts) -> TensorDataset
--   inputs [N, 1, 28, 28] in [0, 1] (bytes / 255), targets [N] int64 class ids 1..10
--   (the IDX label byte + 1; names in FashionMnist.classes); N = 60000 for 'train', 10000 for 'test'.
-- The IDX files (gzip or plain) are read by the C core (fnn_read_idx), the same reader as Mnist,
-- from the first place that has both files of the split:
--   1. /usr/share/datasets/fashion-mnist (FashionMnist.SYSTEM_DIR: the Debian package
--      dataset-fashion-mnist);
--   2. data.dir() .. '/fashion-mnist' ($FASTNN_DATA, ~/.cache/fastnn, or data.set_dir);
--   3. a download into (2) from FashionMnist.mirrors (torchvision's), checked against the
--      published MD5s in FashionMnist.resources, as Mnist does.
-- try_load returns nil, err instead of raising. opts as for Mnist.load.
local idx = require 'fastnn.data.idx'

local FashionMnist = {}
FashionMnist.SYSTEM_DIR = '/usr/share/datasets/fashion-mnist'
FashionMnist.SUBDIR = 'fashion-mnist'
FashionMnist.mirrors = {'http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/'}
FashionMnist.resources = {
   {'train-images-idx3-ubyte.gz', '8d4fb7e6c68d591d4c3dfef9ec88bf0d'},
   {'train-labels-idx1-ubyte.gz', '25c81989df183df01b3e8a0aad5dffbe'},
   {'t10k-images-idx3-ubyte.gz', 'bef4ecab320f06d8554ea6380940ec79'},
   {'t10k-labels-idx1-ubyte.gz', 'bb300cfdad3c16e7a12a480ee83cd310'},
}
FashionMnist.classes = {'T-shirt/top', 'Trouser', 'Pullover', 'Dress', 'Coat',
                        'Sandal', 'Shirt', 'Sneaker', 'Bag', 'Ankle boot'}

local prefixes = {train = 'train', test = 't10k'}

local function exists(path)
   local f = io.open(path, 'rb')
   if f then f:close() return true end
   return false
end

function FashionMnist.set_mirrors(list) FashionMnist.mirrors = idx.mirror_list('FashionMnist', list) end

function FashionMnist.dir() return require('fastnn.data').dir() .. '/' .. FashionMnist.SUBDIR end

-- the directories searched before downloading, in order
function FashionMnist.dirs() return {FashionMnist.SYSTEM_DIR, FashionMnist.dir()} end

-- one file of a directory (gzip preferred, plain accepted), or nil
local function in_dir(d, name)
   for _, candidate in ipairs{d .. '/' .. name .. '.gz', d .. '/' .. name} do
      if exists(candidate) then return candidate end
   end
end

local OPTS = require('fastnn.options').declare('data.FashionMnist.load', {
   {'progress', 'boolean|string', nil, "download progress: true/'auto', 'bar', 'line', false/'quiet'",
    values = {'auto', 'bar', 'line', 'quiet'}, default_doc = 'data.defaults.progress'},
   {'timeout', 'number', nil, 'seconds for a whole file', min = 0, default_doc = 'data.defaults.timeout'},
   {'connect_timeout', 'number', nil, 'seconds to connect', min = 0, default_doc = 'data.defaults.connect_timeout'},
})

function FashionMnist.try_load(split, opts)
   local bad = OPTS:try(opts)
   if bad then error(bad, 2) end   -- a mistake of the caller's, not a failed download
   split = split or 'train'
   local prefix = prefixes[split]
   if not prefix then
      return nil, ("FashionMnist.load: split is '%s', expected 'train' or 'test'"):format(tostring(split))
   end
   local iname, lname = prefix .. '-images-idx3-ubyte', prefix .. '-labels-idx1-ubyte'
   local ipath, lpath
   for _, d in ipairs(FashionMnist.dirs()) do
      ipath, lpath = in_dir(d, iname), in_dir(d, lname)
      if ipath and lpath then break end
   end
   if not (ipath and lpath) then
      local dir, err = idx.try_fetch('FashionMnist', FashionMnist.mirrors, FashionMnist.resources,
                                     FashionMnist.dir(), opts)
      if not dir then
         return nil, ('%s\n(no %s.gz in %s; the Debian package dataset-fashion-mnist provides the files: '
                      .. 'apt-get install dataset-fashion-mnist)'):format(err, iname, table.concat(FashionMnist.dirs(), ' or '))
      end
      ipath, lpath = dir .. '/' .. iname .. '.gz', dir .. '/' .. lname .. '.gz'
   end
   local ds, err = idx.try_pair('FashionMnist', ipath, lpath)
   if not ds then return nil, err end
   ds.classes, ds.split = FashionMnist.classes, split
   return ds
end

function FashionMnist.load(split, opts)
   local bad = OPTS:try(opts)
   if bad then error(bad, 2) end
   local ds, err = FashionMnist.try_load(split, opts)
   if not ds then error(err, 2) end
   return ds
end

return FashionMnist
