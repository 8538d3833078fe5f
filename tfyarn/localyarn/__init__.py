"""A real single-machine YARN (ResourceManager + two NodeManagers) built from Maven jars.

Used by the README's main job, the integration tests and CI. Nothing outside this
package depends on it: on a real cluster tfyarn uses the cluster's own ``yarn``.
"""
