# Runs Trainer v2.3.0's dataset initializer (upstream/trainer-v2.3.0-initializers, unchanged) on the
# host, as its pod would run `python -m pkg.initializers.dataset`, with the pod's env. Only its two
# reads of the pod's mounted ServiceAccount are replaced: the in-cluster config by a kubeconfig
# (CACHE_INITIALIZER_KUBECONFIG, the pod's ServiceAccount as a client certificate) and the
# namespace file by POD_NAMESPACE.
import os
import runpy

from kubernetes import config

kubeconfig = os.environ["CACHE_INITIALIZER_KUBECONFIG"]
config.load_incluster_config = lambda: config.load_kube_config(config_file=kubeconfig)

import pkg.initializers.dataset.cache as cache  # noqa: E402

cache.get_namespace = lambda: os.environ["POD_NAMESPACE"]

runpy.run_module("pkg.initializers.dataset", run_name="__main__", alter_sys=True)
