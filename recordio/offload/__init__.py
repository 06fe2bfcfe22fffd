"""The offloaded augmentation tail: the planner (``plan``, no torch), the batched torch kernels
(``kernels``) and the module that runs a planned tail on a batch (``tail``)."""
