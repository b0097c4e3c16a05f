# Loaded before the test director (director.sh: RUBYOPT=-rcellguard_director_shim).
# Debian 12's delayed_job 4.1.9 calls Array#extract_options! (its job_preparer),
# which activesupport 6.1 defines only in this file; the director never requires
# it, so without it the first task fails with NoMethodError (README.md).
require 'active_support/core_ext/array/extract_options'
