-- fastnn.lazy: a package whose members are files loaded on first use (fastnn.data, fastnn.optim):
--   lazy(optim, 'fastnn.optim')   -- optim.Adam is require('fastnn.optim.Adam'), kept once loaded
-- A name that is not a plain identifier, or names no file, is nil.
return function(pkg, prefix)
   return setmetatable(pkg, {__index = function(t, name)
      if type(name) ~= 'string' or not name:match('^%a[%w_]*$') then return nil end
      local modname = prefix .. '.' .. name
      if not package.loaded[modname] and not package.searchpath(modname, package.path) then return nil end
      local m = require(modname)
      rawset(t, name, m)
      return m
   end})
end
