"""Device-generic test classes in the style of PyTorch's test/test_*.py (written against a `device` argument),
instantiated for CPU and for "tpu" by tests/test_device_generic.py with `instantiate_device_type_tests`."""
