// The whole dataset layer in one include: readers, sources, batch assembly, the epoch order and the loader.
#pragma once

#include "datasets/augment.hpp"
#include "datasets/batch_loader.hpp"
#include "datasets/cifar10.hpp"
#include "datasets/dataset.hpp"
#include "datasets/idx.hpp"
#include "datasets/image_source.hpp"
#include "datasets/imagenet.hpp"
#include "datasets/imagenet32.hpp"
#include "datasets/in_memory_source.hpp"
#include "datasets/open_dataset.hpp"
#include "datasets/shuffle.hpp"
