// The whole dataset layer in one include: readers, batch assembly and the epoch order.
#pragma once

#include "datasets/augment.hpp"
#include "datasets/cifar10.hpp"
#include "datasets/dataset.hpp"
#include "datasets/idx.hpp"
#include "datasets/shuffle.hpp"
