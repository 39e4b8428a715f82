-- data.FashionMnist.load('train'|'test') -> TensorDataset
--   inputs [N, 1, 28, 28] in [0, 1] (bytes / 255), targets [N] with 1-based class ids 1..10
--   (the IDX label byte + 1); N = 60000 for 'train', 10000 for 'test'.
-- The IDX files are read (gzip or plain) by the C core (fnn_read_idx) from, in order:
--   $FASTNN_DATA/fashion-mnist, then /usr/share/datasets/fashion-mnist (the Debian
--   package dataset-fashion-mnist). try_load returns nil, err instead of raising.
local fnn_tensor = require 'fastnn.tensor'
local TensorDataset = require 'fastnn.data.TensorDataset'
local C = fnn_tensor.C
local new, done = fnn_tensor.new, fnn_tensor.done

local FashionMnist = {}
FashionMnist.SYSTEM_DIR = '/usr/share/datasets/fashion-mnist'
FashionMnist.classes = {'T-shirt/top', 'Trouser', 'Pullover', 'Dress', 'Coat',
                        'Sandal', 'Shirt', 'Sneaker', 'Bag', 'Ankle boot'}

local prefixes = {train = 'train', test = 't10k'}

local function exists(path)
   local f = io.open(path, 'rb')
   if f then f:close() return true end
   return false
end

-- the directories searched, in order
function FashionMnist.dirs()
   local dirs = {}
   local env = os.getenv('FASTNN_DATA')
   if env and env ~= '' then dirs[#dirs + 1] = env .. '/fashion-mnist' end
   dirs[#dirs + 1] = FashionMnist.SYSTEM_DIR
   return dirs
end

-- the path of one file (gzip preferred, plain accepted), or nil, message
local function find(name)
   local dirs = FashionMnist.dirs()
   for _, d in ipairs(dirs) do
      for _, candidate in ipairs{d .. '/' .. name .. '.gz', d .. '/' .. name} do
         if exists(candidate) then return candidate end
      end
   end
   return nil, ('FashionMnist: cannot find %s.gz in %s; install the Debian package dataset-fashion-mnist '
                .. '(apt-get install dataset-fashion-mnist) or put the IDX files in $FASTNN_DATA/fashion-mnist')
                :format(name, table.concat(dirs, ' or '))
end

local function read_idx(path, scale)
   local out = new()
   if C.fnn_read_idx(out, path, scale) ~= 0 then
      return nil, ('FashionMnist: %s'):format(fnn_tensor.last_error())
   end
   return done(out)
end

function FashionMnist.try_load(split)
   split = split or 'train'
   local prefix = prefixes[split]
   if not prefix then
      return nil, ("FashionMnist.load: split is '%s', expected 'train' or 'test'"):format(tostring(split))
   end
   local ipath, err = find(prefix .. '-images-idx3-ubyte')
   if not ipath then return nil, err end
   local lpath, err2 = find(prefix .. '-labels-idx1-ubyte')
   if not lpath then return nil, err2 end
   local images, e1 = read_idx(ipath, 1 / 255)
   if not images then return nil, e1 end
   local labels, e2 = read_idx(lpath, 1)
   if not labels then return nil, e2 end
   if images.ndim ~= 3 or labels.ndim ~= 1 or images.shape_[0] ~= labels.shape_[0] then
      return nil, ('FashionMnist: %s is %s and %s is %s; expected [N,28,28] images and [N] labels'):format(
         ipath, fnn_tensor.shape_str(images), lpath, fnn_tensor.shape_str(labels))
   end
   -- [N, 28, 28] -> [N, 1, 28, 28] (channels first), a view
   local shape = fnn_tensor.shape_buf
   shape[0], shape[1], shape[2], shape[3] = images.shape_[0], 1, images.shape_[1], images.shape_[2]
   local nchw = new()
   if C.fnn_reshape(nchw, images, 4, shape) ~= 0 then return nil, 'FashionMnist: ' .. fnn_tensor.last_error() end
   local ds = TensorDataset(done(nchw), labels:long() + 1)   -- int64 class ids 1..10
   ds.classes = FashionMnist.classes
   ds.split = split
   return ds
end

function FashionMnist.load(split)
   local ds, err = FashionMnist.try_load(split)
   if not ds then error(err, 2) end
   return ds
end

return FashionMnist
