"""Models the benchmarks build from their definitions, with random weights
(no download, no torchvision): the architectures are torchvision's.

``resnet18()`` is torchvision's ResNet-18 (BasicBlock, layers [2, 2, 2, 2],
1000 classes), in eval mode; ``mobilenet_v2()`` is torchvision's MobileNetV2
(width 1.0, 1000 classes), in eval mode.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["mobilenet_v2", "resnet18"]


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


def _with_random_statistics(model: nn.Module) -> nn.Module:
    """``model`` in eval mode, its batch norms given random running statistics (fresh ones, 0 and 1, hide mistakes)."""
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.running_mean.uniform_(-0.1, 0.1)
            module.running_var.uniform_(0.5, 1.5)
    return model.eval()


def resnet18(seed: int = 0) -> nn.Module:
    """ResNet-18 with random weights and batch-norm statistics, in eval mode."""
    torch.manual_seed(seed)
    return _with_random_statistics(ResNet18())


def _conv_bn_relu6(inputs: int, outputs: int, kernel: int = 3, stride: int = 1, groups: int = 1) -> nn.Sequential:
    """torchvision's Conv2dNormActivation with ReLU6: a convolution padded to keep the size, a batch norm, ReLU6."""
    return nn.Sequential(nn.Conv2d(inputs, outputs, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(outputs), nn.ReLU6())


class InvertedResidual(nn.Module):
    """A 1x1 expansion (absent when ``expand`` is 1), a 3x3 depthwise convolution and a linear 1x1 projection,
    with a residual when the shape is kept."""

    def __init__(self, inputs: int, outputs: int, stride: int, expand: int) -> None:
        super().__init__()
        hidden = inputs * expand
        layers = [_conv_bn_relu6(inputs, hidden, 1)] if expand != 1 else []
        layers += [_conv_bn_relu6(hidden, hidden, 3, stride, groups=hidden),
                   nn.Conv2d(hidden, outputs, 1, bias=False), nn.BatchNorm2d(outputs)]
        self.conv = nn.Sequential(*layers)
        self.residual = stride == 1 and inputs == outputs

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv(x) if self.residual else self.conv(x)


class MobileNetV2(nn.Module):
    """torchvision's MobileNetV2 at width 1.0 (its channel counts are then already multiples of 8)."""

    # (expansion, output channels, blocks, first block's stride), as torchvision lists them.
    SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                (6, 320, 1, 1))

    def __init__(self, classes: int = 1000) -> None:
        super().__init__()
        layers, inputs = [_conv_bn_relu6(3, 32, 3, 2)], 32
        for expand, outputs, blocks, stride in self.SETTINGS:
            for i in range(blocks):
                layers.append(InvertedResidual(inputs, outputs, stride if i == 0 else 1, expand))
                inputs = outputs
        self.features = nn.Sequential(*layers, _conv_bn_relu6(inputs, 1280, 1))
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(x, 1))


def mobilenet_v2(seed: int = 0) -> nn.Module:
    """MobileNetV2 with random weights and batch-norm statistics, in eval mode."""
    torch.manual_seed(seed)
    return _with_random_statistics(MobileNetV2())
