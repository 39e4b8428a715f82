-- data.idx: what Mnist and FashionMnist share: the IDX files of an MNIST-like dataset (a
-- resource list with published MD5s, a mirror list), fetched into a directory and read by the C
-- core (fnn_read_idx: zlib, gzip or plain) into a TensorDataset:
--   inputs [N, 1, 28, 28] float32 in [0, 1] (bytes / 255), targets [N] int64 class ids 1..10.
--   idx.read(path, scale)                          -> tensor, or nil, err
--   idx.try_pair(who, images_path, labels_path)    -> TensorDataset, or nil, err (shapes checked)
--   idx.try_fetch(who, mirrors, resources, dir, opts) -> dir, or nil, err (every file verified)
--   idx.mirror_list(who, list)                     -> a checked copy, each URL ending in '/'
--   idx.dataset(name, {subdir, mirrors, resources, classes, system_dir, package})
--       -> the dataset's table (data.Mnist, data.FashionMnist): load, try_load, set_mirrors, dir, dirs
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local fnn_tensor = require 'fastnn.tensor'
local TensorDataset = require 'fastnn.data.TensorDataset'
local C, new, done = fnn_tensor.C, fnn_tensor.new, fnn_tensor.done
local shape_str = fnn_tensor.shape_str
local too_many = fnn_tensor.too_many

local idx = {}
idx.HEIGHT, idx.WIDTH, idx.CLASSES = 28, 28, 10

function idx.read(path, scale)
   local out = new()
   if C.fnn_read_idx(out, path, scale) ~= 0 then return nil, fnn_tensor.last_error() end
   return done(out)
end

function idx.try_pair(who, ipath, lpath)
   local images, e1 = idx.read(ipath, 1 / 255)
   if not images then return nil, ('%s: %s'):format(who, e1) end
   local labels, e2 = idx.read(lpath, 1)
   if not labels then return nil, ('%s: %s'):format(who, e2) end
   if images.ndim ~= 3 or images.shape_[1] ~= idx.HEIGHT or images.shape_[2] ~= idx.WIDTH then
      return nil, ('%s: %s holds %s, expected images [N,%d,%d]'):format(who, ipath, shape_str(images),
                                                                        idx.HEIGHT, idx.WIDTH)
   end
   if labels.ndim ~= 1 or labels.shape_[0] ~= images.shape_[0] then
      return nil, ('%s: %s holds %s, expected labels [%d] for the images of %s'):format(
         who, lpath, shape_str(labels), tonumber(images.shape_[0]), ipath)
   end
   local n = tonumber(images.shape_[0])
   if n > 0 then
      local top = labels:max():item()
      if top >= idx.CLASSES then
         return nil, ('%s: %s has label %d, expected 0..%d'):format(who, lpath, top, idx.CLASSES - 1)
      end
   end
   -- [N, 28, 28] -> [N, 1, 28, 28] (channels first), a view
   local shape = fnn_tensor.shape_buf
   shape[0], shape[1], shape[2], shape[3] = n, 1, idx.HEIGHT, idx.WIDTH
   local nchw = new()
   if C.fnn_reshape(nchw, images, 4, shape) ~= 0 then return nil, who .. ': ' .. fnn_tensor.last_error() end
   return TensorDataset(done(nchw), labels:long() + 1)   -- int64 class ids 1..10
end

function idx.mirror_list(who, list)
   if type(list) == 'string' then list = {list} end
   if type(list) ~= 'table' or #list == 0 then
      error(('%s.set_mirrors: expected a non-empty list of base URLs'):format(who), 3)
   end
   local out = {}
   for i, url in ipairs(list) do
      if type(url) ~= 'string' or not url:match('^https?://') then
         error(('%s.set_mirrors: mirror %d is %s, expected an http:// or https:// URL'):format(who, i, show_value(url)), 3)
      end
      out[i] = url:sub(-1) == '/' and url or url .. '/'
   end
   return out
end

-- every resource {name, md5} into dir from the first mirror that has it (data.download does the
-- cache check, resume and checksum)
function idx.try_fetch(who, mirrors, resources, dir, opts)
   local data = require 'fastnn.data'
   for _, r in ipairs(resources) do
      local urls = {}
      for i, m in ipairs(mirrors) do urls[i] = m .. r[1] end
      local ok, err = data.try_download(urls, dir .. '/' .. r[1], {md5 = r[2], progress = opts and opts.progress,
                                        timeout = opts and opts.timeout,
                                        connect_timeout = opts and opts.connect_timeout})
      if not ok then return nil, ('%s: %s'):format(who, err) end
   end
   return dir
end

-- one readable file of a directory (gzip preferred, plain accepted), or nil
local function in_dir(d, name)
   for _, candidate in ipairs{d .. '/' .. name .. '.gz', d .. '/' .. name} do
      local f = io.open(candidate, 'rb')
      if f then
         f:close()
         return candidate
      end
   end
end

local prefixes = {train = 'train', test = 't10k'}

-- An MNIST-like dataset's table. Its files are fetched into dir() (data.dir() .. '/' .. subdir)
-- from the mirrors, checked against the resources' MD5s; with a system_dir (a Debian package's,
-- named by package), the first of dirs() holding both files of a split is read as it is, and a
-- failed download says which package provides them. The fields stay the table's, so a program (or
-- a spec) may change SYSTEM_DIR, mirrors or resources later.
function idx.dataset(name, d)
   local D = {SUBDIR = d.subdir, SYSTEM_DIR = d.system_dir, mirrors = d.mirrors, resources = d.resources,
              classes = d.classes}
   local OPTS = require('fastnn.options').declare('data.' .. name .. '.load', {
      {'progress', 'boolean|string', nil, "download progress: true/'auto', 'bar', 'line', false/'quiet'",
       values = {'auto', 'bar', 'line', 'quiet'}, default_doc = 'data.defaults.progress'},
      {'timeout', 'number', nil, 'seconds for a whole file', min = 0, default_doc = 'data.defaults.timeout'},
      {'connect_timeout', 'number', nil, 'seconds to connect', min = 0, default_doc = 'data.defaults.connect_timeout'},
   })

   function D.set_mirrors(list, extra)
      if extra ~= nil then too_many(name .. '.set_mirrors', 2, extra, 'list') end
      D.mirrors = idx.mirror_list(name, list)
   end

   function D.dir(extra)
      if extra ~= nil then too_many(name .. '.dir', 1, extra, '') end
      return require('fastnn.data').dir() .. '/' .. D.SUBDIR
   end

   -- the directories searched before downloading, in order
   function D.dirs(extra)
      if extra ~= nil then too_many(name .. '.dirs', 1, extra, '') end
      return D.SYSTEM_DIR and {D.SYSTEM_DIR, D.dir()} or {D.dir()}
   end

   function D.try_load(split, opts, extra)
      if extra ~= nil then too_many(name .. '.try_load', 3, extra, 'split, opts') end
      local bad = OPTS:try(opts)
      if bad then error(bad, 2) end   -- a mistake of the caller's, not a failed download
      split = split or 'train'
      local prefix = prefixes[split]
      if not prefix then
         return nil, ("%s.load: split is '%s', expected 'train' or 'test'"):format(name, tostring(split))
      end
      local iname, lname = prefix .. '-images-idx3-ubyte', prefix .. '-labels-idx1-ubyte'
      local ipath, lpath
      if D.SYSTEM_DIR then
         for _, dir in ipairs(D.dirs()) do
            ipath, lpath = in_dir(dir, iname), in_dir(dir, lname)
            if ipath and lpath then break end
         end
      end
      if not (ipath and lpath) then
         local dir, err = idx.try_fetch(name, D.mirrors, D.resources, D.dir(), opts)
         if not dir then
            if not D.SYSTEM_DIR then return nil, err end
            return nil, ('%s\n(no %s.gz in %s; the Debian package %s provides the files: '
                         .. 'apt-get install %s)'):format(err, iname, table.concat(D.dirs(), ' or '), d.package,
                                                          d.package)
         end
         ipath, lpath = dir .. '/' .. iname .. '.gz', dir .. '/' .. lname .. '.gz'
      end
      local ds, err = idx.try_pair(name, ipath, lpath)
      if not ds then return nil, err end
      ds.classes, ds.split = D.classes, split
      return ds
   end

   function D.load(split, opts, extra)
      if extra ~= nil then too_many(name .. '.load', 3, extra, 'split, opts') end
      local bad = OPTS:try(opts)
      if bad then error(bad, 2) end
      local ds, err = D.try_load(split, opts)
      if not ds then error(err, 2) end
      return ds
   end
   return D
end

return idx
