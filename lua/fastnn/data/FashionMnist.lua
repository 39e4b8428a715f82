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

return idx.dataset('FashionMnist', {
   subdir = 'fashion-mnist',
   system_dir = '/usr/share/datasets/fashion-mnist',
   package = 'dataset-fashion-mnist',
   mirrors = {'http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/'},
   resources = {
      {'train-images-idx3-ubyte.gz', '8d4fb7e6c68d591d4c3dfef9ec88bf0d'},
      {'train-labels-idx1-ubyte.gz', '25c81989df183df01b3e8a0aad5dffbe'},
      {'t10k-images-idx3-ubyte.gz', 'bef4ecab320f06d8554ea6380940ec79'},
      {'t10k-labels-idx1-ubyte.gz', 'bb300cfdad3c16e7a12a480ee83cd310'},
   },
   classes = {'T-shirt/top', 'Trouser', 'Pullover', 'Dress', 'Coat',
              'Sandal', 'Shirt', 'Sneaker', 'Bag', 'Ankle boot'},
})
