"""Models the benchmarks build from their definitions, with random weights
(no download, no torchvision): the architectures are torchvision's.

``resnet18()`` is torchvision's ResNet-18 (BasicBlock, layers [2, 2, 2, 2],
1000 classes), in eval mode.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["resnet18"]


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with batch norms and a residual (downsampled when the shape changes)."""

    def __init__(self, inputs: int, outputs: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inputs, outputs, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(outputs)
        self.conv2 = nn.Conv2d(outputs, outputs, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(outputs)
        self.downsample = (nn.Sequential(nn.Conv2d(inputs, outputs, 1, stride, bias=False), nn.BatchNorm2d(outputs))
                           if stride != 1 or inputs != outputs else nn.Identity())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + self.downsample(x))


class ResNet18(nn.Module):
    def __init__(self, classes: int = 1000) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        widths = (64, 128, 256, 512)
        layers, inputs = [], 64
        for i, width in enumerate(widths):
            layers += [BasicBlock(inputs, width, 1 if i == 0 else 2), BasicBlock(width, width, 1)]
            inputs = width
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def resnet18(seed: int = 0) -> nn.Module:
    """ResNet-18 with random weights and batch-norm statistics, in eval mode."""
    torch.manual_seed(seed)
    model = ResNet18()
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.running_mean.uniform_(-0.1, 0.1)
            module.running_var.uniform_(0.5, 1.5)
    return model.eval()
