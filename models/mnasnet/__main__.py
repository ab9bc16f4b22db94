"""`python -m models.mnasnet --model_dir=DIR` trains configs/mnasnet/default.gin on digits."""

from models.core.main import main
from models.core.tasks.image_classification import ImageClassificationTask
from models.mnasnet import model  # noqa: F401 - registers the gin configurables

if __name__ == "__main__":
    main(ImageClassificationTask, family="mnasnet", default_recipe="mnasnet/default.gin")
